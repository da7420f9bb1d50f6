import { createAdapter } from '@socket.io/redis-adapter';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { BUS_ACK_TIMEOUT_MS } from './bus.js';
import { watchRedisConnection } from './redis-watchdog.js';

export interface RedisAdapterHandle {
  adapter: ReturnType<typeof createAdapter>;
  /** Quits the pub/sub connections (after the namespaces' adapters were closed). */
  close(): Promise<void>;
  /**
   * Called each time the subscriber is subscribed again after it was away (broadcasts of other
   * nodes published meanwhile were lost): the position check tells the sockets (docs/catch-up.md).
   */
  onResume(listener: () => void): void;
}

const READY_TIMEOUT_MS = 5000;
const QUIT_TIMEOUT_MS = 1000;

/** The adapter's channel prefix: `<REDIS_KEY_PREFIX>socket.io`, then `#/agents#...`. */
export const adapterKey = (redisKeyPrefix: string): string => `${redisKeyPrefix}socket.io`;

/**
 * `@socket.io/redis-adapter` on two connections duplicated from the context's Redis client (one is
 * put in subscriber mode). Broadcasts and room operations (socketsJoin/socketsLeave/
 * disconnectSockets) then reach the sockets of every node; those room operations are
 * fire-and-forget across nodes, which is why membership changes cross through the cluster bus
 * (cluster/membership-sync.ts). Nothing else crosses through the adapter.
 */
export async function createRedisAdapter(redis: Redis, key: string, logger: Logger): Promise<RedisAdapterHandle> {
  // The publisher fails fast while Redis is away (a stale broadcast is worth nothing later). The
  // subscriber queues its (re)subscriptions until it is connected, and has no command timeout: a
  // SUBSCRIBE sent while Redis is away must wait for the connection, not fail (redis-client.ts).
  const pub = redis.duplicate({ enableOfflineQueue: false });
  const sub = redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });

  let failing = false;
  const onCommandError = (err: unknown): void => {
    if (failing) return; // one warning per outage, not one per broadcast
    failing = true;
    logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'socket.io redis adapter: command failed; cross-node fan-out degraded');
  };
  for (const client of [pub, sub]) {
    client.on('error', onCommandError);
    client.on('ready', () => {
      failing = false;
    });
  }
  // The adapter fires these commands without handling their rejections; during a Redis outage that
  // would be an unhandled rejection (a crash), so each result gets a handler here.
  guardCommands(pub, GUARDED_ADAPTER_COMMANDS.pub, onCommandError);
  guardCommands(sub, GUARDED_ADAPTER_COMMANDS.sub, onCommandError);

  // The subscriber was away once it closed; its next `ready` (ioredis re-subscribed) ends the gap.
  const resumeListeners: (() => void)[] = [];
  let away = false;
  sub.on('close', () => {
    away = true;
  });
  sub.on('ready', () => {
    if (!away) return;
    away = false;
    for (const listener of resumeListeners) listener();
  });
  // A silent cut kills both for good otherwise: the subscriber receives nothing, every PUBLISH times out.
  const watchers = [pub, sub].map((client) => watchRedisConnection(client, {
    onStale: () => logger.warn('socket.io redis adapter: connection did not answer; reconnecting'),
  }));
  const stopWatching = (): void => {
    for (const stop of watchers) stop();
  };

  const ready = await Promise.all([whenReady(pub), whenReady(sub)]);
  if (ready.includes(false)) logger.warn('socket.io redis adapter: Redis not ready yet; continuing, it will connect when Redis does');

  return {
    // requestsTimeout bounds the adapter's own requests (fetchSockets), like the bus's acknowledgements.
    adapter: createAdapter(pub, sub, { key, requestsTimeout: BUS_ACK_TIMEOUT_MS }),
    async close() {
      stopWatching();
      await Promise.all([quit(pub), quit(sub)]);
    },
    onResume(listener) {
      resumeListeners.push(listener);
    },
  };
}

/**
 * A patch on the adapter's habits, not its API: it calls these commands of its clients and drops
 * their promises. test/integration/realtime-library-patches.test.ts fails if it starts calling others.
 */
export const GUARDED_ADAPTER_COMMANDS = { pub: ['publish'], sub: ['subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe'] } as const;

function guardCommands(client: Redis, names: readonly string[], onError: (err: unknown) => void): void {
  const target = client as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of names) {
    const original = target[name]!.bind(client);
    target[name] = (...args: unknown[]) => {
      const result = original(...args);
      if (result instanceof Promise) result.catch(onError);
      return result;
    };
  }
}

function whenReady(client: Redis): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, READY_TIMEOUT_MS);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}

async function quit(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), QUIT_TIMEOUT_MS);
  });
  const outcome = await Promise.race([client.quit().then(() => 'quit' as const, () => 'failed' as const), timeout]);
  clearTimeout(timer);
  if (outcome !== 'quit') client.disconnect();
}
