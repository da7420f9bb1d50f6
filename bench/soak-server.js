// The server under soak (bench/soak.js starts it): the built service (dist/), unchanged, plus an IPC
// channel to the parent process only, which forces a garbage collection and reports the heap and the
// Socket.IO state. Nothing new is exposed on the network. Run with `node --expose-gc`.
import { writeHeapSnapshot } from 'node:v8';
import { startApp } from '../dist/app.js';
import { buildConfig } from '../dist/config/config.js';
import { readEnv } from '../dist/config/env.js';
import { createLogger } from '../dist/logger.js';

if (typeof process.send !== 'function' || typeof globalThis.gc !== 'function') {
  console.error('soak-server: start it from bench/soak.js (needs an IPC channel and --expose-gc)');
  process.exit(2);
}

const config = buildConfig(readEnv());
const app = await startApp(config, createLogger(config.logLevel));

/** Live handles and requests by kind (timers, TCP sockets, ...): what the event loop still holds. */
function activeResources() {
  const counts = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** Two full collections with a turn of the event loop between them (finalizers, weak refs). */
async function collect() {
  globalThis.gc();
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc();
}

process.on('message', (message) => {
  void (async () => {
    if (message.type === 'sample') {
      if (message.gc) await collect();
      const memory = process.memoryUsage();
      const nsp = app.realtime.namespace;
      process.send({
        type: 'sample',
        id: message.id,
        heapUsed: memory.heapUsed,
        heapTotal: memory.heapTotal,
        external: memory.external,
        arrayBuffers: memory.arrayBuffers,
        rss: memory.rss,
        sockets: nsp.sockets.size,
        rooms: nsp.adapter.rooms.size,
        engineClients: app.realtime.io.engine.clientsCount,
        resources: activeResources(),
      });
    } else if (message.type === 'snapshot') {
      // Written here, read by the parent: parsing a snapshot inside the server would distort the heap.
      await collect();
      process.send({ type: 'snapshot', id: message.id, path: writeHeapSnapshot(message.path) });
    } else if (message.type === 'close') {
      await app.close();
      process.exit(0);
    }
  })();
});

process.send({ type: 'listening', url: app.url, pid: process.pid });
