import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Namespace } from 'socket.io';
import { Adapter, type BroadcastFlags, type BroadcastOptions, type ClusterAdapter, type ClusterMessage, MessageType } from 'socket.io-adapter';
import { BUS_ACK_TIMEOUT_MS } from './bus.js';
import { watchRedisConnection } from './redis-watchdog.js';

/**
 * `sharded` (Redis >= 7): a broadcast to one room travels on that room's shard channel, which a
 * node subscribes only while it holds a socket in the room. `classic`: every node hears every
 * broadcast (docs/scale-out.md, "Fan-out").
 */
export type AdapterMode = 'sharded' | 'classic';

/** What Socket.IO's `adapter` option takes: one adapter per namespace. */
type AdapterFactory = (nsp: Namespace) => Adapter;

export interface RedisAdapterHandle {
  adapter: AdapterFactory;
  mode: AdapterMode;
  /** Quits the pub/sub connections (after the namespaces' adapters were closed). */
  close(): Promise<void>;
  /**
   * Called each time the subscriber is subscribed again after it was away (broadcasts of other
   * nodes published meanwhile were lost): the position check tells the sockets (docs/catch-up.md).
   */
  onResume(listener: () => void): void;
  /**
   * Resolves once every room subscription asked for so far is active (sharded mode subscribes a
   * room's channel when its first socket here joins, without waiting), at most SUBSCRIBE_WAIT_MS:
   * a `lastSeq` read after it covers every message these sockets will not get live. Past the
   * bound the subscriber is away, and its resume runs the position check.
   */
  subscribed(): Promise<void>;
}

const READY_TIMEOUT_MS = 5000;
const QUIT_TIMEOUT_MS = 1000;
/** Below the bus's acknowledgement timeout: a membership change waits for it on every node. */
export const SUBSCRIBE_WAIT_MS = 1000;
/** Sharded pub/sub (SPUBLISH/SSUBSCRIBE) came with Redis 7.0. */
const SHARDED_SINCE_MAJOR = 7;

/** The adapter's channel prefix: `<REDIS_KEY_PREFIX>socket.io`, then `#/agents#...`. */
export const adapterKey = (redisKeyPrefix: string): string => `${redisKeyPrefix}socket.io`;

/**
 * `@socket.io/redis-adapter` on two connections duplicated from the context's Redis client (one is
 * put in subscriber mode), sharded when Redis is 7 or later (`mode` forces one). Broadcasts and
 * room operations (socketsJoin/socketsLeave/disconnectSockets) then reach the sockets of every
 * node that holds the room; those room operations are fire-and-forget across nodes, which is why
 * membership changes cross through the cluster bus (cluster/membership-sync.ts). Nothing else
 * crosses through the adapter.
 */
export async function createRedisAdapter(redis: Redis, key: string, logger: Logger, options: { mode?: AdapterMode } = {}): Promise<RedisAdapterHandle> {
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
  // The subscriptions not yet confirmed by Redis (see `subscribed`).
  const pendingSubscriptions = new Set<Promise<unknown>>();
  // The adapter fires these commands without handling their rejections; during a Redis outage that
  // would be an unhandled rejection (a crash), so each result gets a handler here.
  guardCommands(pub, GUARDED_ADAPTER_COMMANDS.pub, onCommandError);
  guardCommands(sub, GUARDED_ADAPTER_COMMANDS.sub, onCommandError, (name, result) => {
    if (name !== 'ssubscribe') return;
    pendingSubscriptions.add(result);
    const settled = (): void => void pendingSubscriptions.delete(result);
    result.then(settled, settled);
  });

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
  const mode = options.mode ?? await detectMode(pub, logger);
  logger.info({ mode }, mode === 'sharded'
    ? 'socket.io redis adapter: sharded pub/sub, a room\'s broadcasts reach only the nodes holding its members'
    : 'socket.io redis adapter: classic pub/sub (Redis < 7), every broadcast reaches every node');

  return {
    adapter: mode === 'sharded'
      ? localFirst(createShardedAdapter(pub, sub, { channelPrefix: key, subscriptionMode: 'dynamic' }))
      // requestsTimeout bounds the adapter's own requests (fetchSockets), like the bus's acknowledgements.
      : createAdapter(pub, sub, { key, requestsTimeout: BUS_ACK_TIMEOUT_MS }),
    mode,
    async close() {
      stopWatching();
      await Promise.all([quit(pub), quit(sub)]);
    },
    onResume(listener) {
      resumeListeners.push(listener);
    },
    async subscribed() {
      if (pendingSubscriptions.size === 0) return;
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS);
      });
      await Promise.race([Promise.allSettled([...pendingSubscriptions]), bound]);
      clearTimeout(timer);
    },
  };
}

/**
 * INFO server's redis_version, read once: sharded from 7.0. When Redis cannot answer at startup,
 * sharded (the version this service is deployed with, docs/scale-out.md): every node must run the
 * same mode, and a node that guessed differently from its peers would not hear them.
 */
async function detectMode(pub: Redis, logger: Logger): Promise<AdapterMode> {
  try {
    const version = /^redis_version:(\d+)\./m.exec(await pub.info('server'))?.[1];
    if (version !== undefined) return Number(version) >= SHARDED_SINCE_MAJOR ? 'sharded' : 'classic';
    logger.warn('socket.io redis adapter: INFO server has no redis_version; assuming sharded pub/sub');
  } catch (err) {
    logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'socket.io redis adapter: Redis version unknown; assuming sharded pub/sub');
  }
  return 'sharded';
}

/**
 * The sharded adapter acts on this node's sockets (a broadcast, socketsJoin/socketsLeave,
 * disconnectSockets) only after Redis answered its SPUBLISH (it waits for an offset this service
 * does not use: no connection state recovery), so a slow or silently cut Redis would hold local
 * delivery and revocations, and reorder them against direct emits. As the classic adapter does:
 * publish without waiting, then act here at once.
 */
function localFirst(factory: ReturnType<typeof createShardedAdapter>): AdapterFactory {
  type Published = DistributiveOmit<ClusterMessage, 'nsp' | 'uid'>;
  const encode = (opts: BroadcastOptions): { rooms: string[]; except: string[]; flags: BroadcastFlags } =>
    ({ rooms: [...opts.rooms], except: [...(opts.except ?? [])], flags: opts.flags ?? {} });
  // A function, not an arrow: Socket.IO calls it with `new` (an object returned replaces `this`).
  return function localFirstAdapter(nsp: Namespace): Adapter {
    const adapter = factory(nsp) as ClusterAdapter;
    const publish = (opts: BroadcastOptions, message: Published): void => {
      if (opts.flags?.local !== true) (adapter as unknown as { publish(message: Published): void }).publish(message);
    };
    adapter.broadcast = (packet: unknown, opts: BroadcastOptions): Promise<void> => {
      publish(opts, { type: MessageType.BROADCAST, data: { packet, opts: encode(opts) } });
      Adapter.prototype.broadcast.call(adapter, packet, opts);
      return Promise.resolve();
    };
    adapter.addSockets = (opts: BroadcastOptions, rooms: string[]): Promise<void> => {
      publish(opts, { type: MessageType.SOCKETS_JOIN, data: { opts: encode(opts), rooms } });
      Adapter.prototype.addSockets.call(adapter, opts, rooms);
      return Promise.resolve();
    };
    adapter.delSockets = (opts: BroadcastOptions, rooms: string[]): Promise<void> => {
      publish(opts, { type: MessageType.SOCKETS_LEAVE, data: { opts: encode(opts), rooms } });
      Adapter.prototype.delSockets.call(adapter, opts, rooms);
      return Promise.resolve();
    };
    adapter.disconnectSockets = (opts: BroadcastOptions, close: boolean): Promise<void> => {
      publish(opts, { type: MessageType.DISCONNECT_SOCKETS, data: { opts: encode(opts), close } });
      Adapter.prototype.disconnectSockets.call(adapter, opts, close);
      return Promise.resolve();
    };
    return adapter;
  };
}

/** Omit over each member of a union (the library's own helper is not exported). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * A patch on the adapter's habits, not its API: it calls these commands of its clients and drops
 * their promises. test/integration/realtime-library-patches.test.ts fails if it starts calling others.
 */
export const GUARDED_ADAPTER_COMMANDS = {
  pub: ['publish', 'spublish'],
  sub: ['subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe', 'ssubscribe', 'sunsubscribe'],
} as const;

function guardCommands(client: Redis, names: readonly string[], onError: (err: unknown) => void, onSent?: (name: string, result: Promise<unknown>) => void): void {
  const target = client as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of names) {
    const original = target[name]!.bind(client);
    target[name] = (...args: unknown[]) => {
      const result = original(...args);
      if (result instanceof Promise) {
        result.catch(onError);
        onSent?.(name, result);
      }
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
