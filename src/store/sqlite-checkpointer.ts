import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints on a worker thread. SQLite otherwise checkpoints inside whichever commit pushes
 * the WAL past 1000 pages: on the event loop, with two fsyncs (milliseconds each), every second or
 * so under load, a stall for every request and event in flight. The worker runs a PASSIVE
 * checkpoint (it never waits for, nor blocks, readers and writers) on its own connection every
 * `intervalMs`; the service's connection keeps a far higher automatic threshold only as a safety
 * net. A side effect: the WAL reaches the database file, and the disk, within `intervalMs` of a
 * commit instead of whenever 1000 pages have accumulated.
 */
export interface Checkpointer {
  close(): Promise<void>;
}

// The worker is plain CommonJS (eval): it must run the same from src (tests) and from dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = ' + workerData.synchronous);
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy (another checkpoint) or the file went away: the next round, or the safety net, will do
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export const SAFETY_NET_AUTOCHECKPOINT_PAGES = 20_000;

export function startCheckpointer(path: string, synchronous: 'normal' | 'full', intervalMs = 200): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver, intervalMs, synchronous: synchronous.toUpperCase() } });
  worker.unref();
  let exited = false;
  const gone = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      exited = true;
      resolve();
    });
  });
  // A failing worker must not take the service down: the connection's own threshold takes over.
  worker.on('error', () => undefined);
  return {
    async close() {
      if (exited) return;
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), 2000);
      await gone;
      clearTimeout(timer);
    },
  };
}
