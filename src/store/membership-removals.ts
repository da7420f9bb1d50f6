import type { Redis } from 'ioredis';
import type { MembershipCache, MembershipRemovals } from '../core/rooms/membership-cache.js';

export interface MembershipRemovalsLogger {
  warn(obj: object, msg: string): void;
}

export interface RedisMembershipRemovals extends MembershipRemovals {
  close(): Promise<void>;
}

/**
 * Membership removals between nodes over Redis pub/sub, for each node's MembershipCache: a removal
 * is announced on `<REDIS_KEY_PREFIX>membership-removed` and every node forgets the entry when the
 * message arrives (milliseconds). The subscriber connection is the "live" signal: while it is not
 * subscribed, announcements may be missed, so the cache is bypassed; once it is subscribed again
 * the cache is cleared (what was missed is forgotten with the rest). An announcement lost on the
 * publishing side is bounded by the cache's entry lifetime.
 */
export async function createRedisMembershipRemovals(
  redis: Redis,
  channel: string,
  cache: MembershipCache,
  logger: MembershipRemovalsLogger,
): Promise<RedisMembershipRemovals> {
  // Subscribes on every (re)connection itself, so it knows when a gap ended.
  const sub = redis.duplicate({ enableOfflineQueue: true, commandTimeout: undefined, maxRetriesPerRequest: null, autoResubscribe: false });
  let live = false;
  let closed = false;
  sub.on('error', () => undefined); // the main client already reports Redis outages
  sub.on('close', () => {
    live = false;
  });
  sub.on('message', (_channel: string, message: string) => {
    try {
      const [roomId, agentId] = JSON.parse(message) as [string, string];
      cache.forget(roomId, agentId);
    } catch {
      cache.clear(); // unreadable: assume anything may have changed
    }
  });
  const subscribe = async (): Promise<void> => {
    try {
      await sub.subscribe(channel);
      if (closed) return;
      cache.clear(); // whatever was announced while this node was not listening is forgotten
      live = true;
    } catch {
      // not live: the next 'ready' tries again, and until then the cache is bypassed
    }
  };
  sub.on('ready', () => void subscribe());
  if (sub.status === 'ready') await subscribe();
  else await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 3000); // a Redis that is down does not stop the node from starting
    sub.once('ready', () => {
      clearTimeout(timer);
      // let the 'ready' handler above subscribe first
      setImmediate(resolve);
    });
  });

  return {
    get live() {
      return live;
    },
    async announce(roomId, agentId) {
      try {
        await redis.publish(channel, JSON.stringify([roomId, agentId]));
      } catch (err) {
        // The entry may stay in other nodes' caches until it expires (MembershipCache ttlMs).
        logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'membership removal not announced to other nodes');
      }
    },
    async close() {
      closed = true;
      live = false;
      sub.disconnect();
    },
  };
}
