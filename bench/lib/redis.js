import { spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './processes.js';

/** A private Redis on a free port (the shared one carries other workers' adapters), or null. */
export async function startRedis() {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    return process.env.AMS_BENCH_REDIS_URL ? { url: process.env.AMS_BENCH_REDIS_URL, pid: null, stop: async () => {} } : { error: 'redis-server not found and AMS_BENCH_REDIS_URL unset' };
  }
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {}); // refused until redis-server listens: retried below
  for (let i = 0; i < 50; i++) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch {
      await sleep(100);
    }
  }
  client.disconnect();
  return {
    url,
    /** The server's process, for its CPU (/proc). */
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}
