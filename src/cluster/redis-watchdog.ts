import type { Redis } from 'ioredis';

/** How often a Redis connection is asked to answer, and how long it has to. */
export const REDIS_PING_INTERVAL_MS = 5000;
export const REDIS_PING_TIMEOUT_MS = 3000;

/**
 * When the path to Redis goes silent without a reset (a network cut, a proxy that stops forwarding,
 * a half-open TCP connection), ioredis keeps the connection: a subscriber, which only reads, never
 * notices and silently loses every message published from then on; a client with a command timeout
 * sees each command time out, for good (TCP keepalive takes minutes, and a proxy's own socket answers
 * it). A PING it must answer bounds that: without an answer in time, on a connection ioredis still
 * thinks ready, the connection is dropped and ioredis reconnects (re-subscribing; its `ready` then
 * tells the owner a gap ended). docs/catch-up.md "Silent Redis cuts".
 */
export function watchRedisConnection(client: Redis, options: { intervalMs?: number; timeoutMs?: number; onStale?: () => void } = {}): () => void {
  const intervalMs = options.intervalMs ?? REDIS_PING_INTERVAL_MS;
  const timeoutMs = options.timeoutMs ?? REDIS_PING_TIMEOUT_MS;
  let waiting = false;
  const stale = (): void => {
    waiting = false; // the PING may be answered after the reconnection only, or never
    if (client.status !== 'ready') return; // ioredis is reconnecting already
    options.onStale?.();
    client.disconnect(true);
  };
  const timer = setInterval(() => {
    if (waiting || client.status !== 'ready') return;
    waiting = true;
    const deadline = setTimeout(stale, timeoutMs);
    deadline.unref();
    client.ping().then(
      () => {
        clearTimeout(deadline);
        waiting = false;
      },
      () => {
        // A command timeout on a connection that looks ready: the same silence.
        clearTimeout(deadline);
        stale();
      },
    );
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
