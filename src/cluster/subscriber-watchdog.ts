import type { Redis } from 'ioredis';

/** How often a subscriber connection is asked to answer, and how long it has to. */
export const SUBSCRIBER_PING_INTERVAL_MS = 5000;
export const SUBSCRIBER_PING_TIMEOUT_MS = 3000;

/**
 * A subscriber connection only reads: when the path to Redis goes silent without a reset (a network
 * cut, a proxy that stops forwarding, a half-open TCP connection), nothing it does fails, so it is
 * never reconnected and every message published meanwhile and afterwards is silently lost (TCP
 * keepalive would take minutes, and a proxy's own socket answers it). A PING it must answer bounds
 * that: without an answer in time the connection is dropped and ioredis reconnects, which
 * re-subscribes and tells the owner that a gap ended (its `ready`). docs/catch-up.md.
 */
export function watchSubscriber(client: Redis, options: { intervalMs?: number; timeoutMs?: number; onStale?: () => void } = {}): () => void {
  const intervalMs = options.intervalMs ?? SUBSCRIBER_PING_INTERVAL_MS;
  const timeoutMs = options.timeoutMs ?? SUBSCRIBER_PING_TIMEOUT_MS;
  let waiting = false;
  const timer = setInterval(() => {
    if (waiting || client.status !== 'ready') return;
    waiting = true;
    const stale = setTimeout(() => {
      options.onStale?.();
      waiting = false; // the PING may only be answered after the reconnection, or never
      client.disconnect(true); // reconnect: re-subscribes, then `ready`
    }, timeoutMs);
    client.ping().then(
      () => undefined,
      () => undefined, // a failing connection is reconnected by ioredis itself
    ).finally(() => {
      clearTimeout(stale);
      waiting = false;
    });
    stale.unref();
  }, intervalMs).unref();
  return () => clearInterval(timer);
}
