import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  BUS_ACK_TIMEOUT_MS, FOLLOW_LINGER_MS, FOLLOW_WAIT_MS, FOLLOWED_TOPICS, isBusTopic, isFollowedTopic, isValidPayload, LocalHandlers,
  type BusLogger, type BusPayload, type BusTopic, type ClusterBus, type FollowedTopic,
} from './bus.js';
import { watchRedisConnection } from './redis-watchdog.js';

/**
 * The cluster bus on Redis pub/sub. Channels, under config.redisKeyPrefix:
 *   bus              every message: {id, from, topic, payload}; every node subscribes
 *   bus:ack:<node>   the acknowledgements of one node's messages: the message id
 *   bus:<topic>      a followed topic's messages (FOLLOWED_TOPICS): only the nodes that follow it
 *                    subscribe, so a node holding no inbox waiter reads no other node's commits
 *
 * How many nodes must acknowledge is what PUBLISH answers: the number of subscribers that received
 * the message, the sender's own subscriber included (it counts its own copy as its acknowledgement,
 * after its handlers ran). So a node that is starting or gone is never waited for, and there is no
 * node registry to keep.
 *
 * The subscriber is a dedicated connection. While it is not subscribed the bus is not live (state kept
 * from other nodes' messages must not be trusted); each time it subscribes again, `onResume` listeners
 * run, since messages sent meanwhile were missed.
 */
export interface RedisBusOptions {
  /** config.redisKeyPrefix. */
  keyPrefix: string;
  logger: BusLogger;
  timeoutMs?: number;
  /** How long startup waits for the subscriber before going on without it (a Redis that is down does not stop a node). */
  startupWaitMs?: number;
  /** FOLLOW_LINGER_MS unless told (tests). */
  followLingerMs?: number;
}

/** One followed topic on this node: how many `follow`s are open, its subscription, its pending end. */
interface Following {
  count: number;
  subscribed: Promise<void>;
  linger?: NodeJS.Timeout;
}

interface Envelope {
  id: string;
  from: string;
  topic: BusTopic;
  payload: unknown;
  /** False for `notify`: receivers run their handlers and send no acknowledgement. */
  ack?: boolean;
}

interface Pending {
  acks: number;
  /** Receivers PUBLISH reported; unknown until it answered. */
  expected: number | undefined;
  settle(outcome: 'acknowledged' | 'timeout' | 'failed'): void;
}

const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function parseEnvelope(message: string): Envelope | null {
  try {
    const value: unknown = JSON.parse(message);
    if (typeof value !== 'object' || value === null) return null;
    const { id, from, topic, payload, ack } = value as Record<string, unknown>;
    if (typeof id !== 'string' || typeof from !== 'string' || !isBusTopic(topic)) return null;
    return { id, from, topic, payload, ack: ack !== false };
  } catch {
    return null;
  }
}

export async function createRedisBus(redis: Redis, options: RedisBusOptions): Promise<ClusterBus> {
  const { logger } = options;
  const timeoutMs = options.timeoutMs ?? BUS_ACK_TIMEOUT_MS;
  const nodeId = randomUUID();
  const channel = `${options.keyPrefix}bus`;
  const ackChannel = `${options.keyPrefix}bus:ack:${nodeId}`;
  const handlers = new LocalHandlers(logger);
  const pending = new Map<string, Pending>();
  const resumeListeners: (() => void)[] = [];
  const followedChannel = (topic: FollowedTopic): string => `${options.keyPrefix}bus:${topic}`;
  const followedChannels = new Set(FOLLOWED_TOPICS.map(followedChannel));
  const following = new Map<FollowedTopic, Following>();

  // Subscribes on every (re)connection itself, so it knows when a gap ended.
  const sub = redis.duplicate({ enableOfflineQueue: true, commandTimeout: undefined, maxRetriesPerRequest: null, autoResubscribe: false });
  let live = false;
  let closed = false;
  sub.on('error', () => undefined); // the main client already reports Redis outages
  sub.on('close', () => {
    live = false;
  });
  // A silent connection (network cut without a reset) is found and reconnected: then `onResume`.
  const stopWatching = watchRedisConnection(sub, {
    onStale: () => {
      live = false;
      logger.warn({}, 'cluster bus: subscriber did not answer; reconnecting');
    },
  });

  const acknowledged = (id: string): void => {
    const entry = pending.get(id);
    if (!entry) return;
    entry.acks++;
    if (entry.expected !== undefined && entry.acks >= entry.expected) entry.settle('acknowledged');
  };

  const received = async (message: string): Promise<void> => {
    const envelope = parseEnvelope(message);
    if (envelope === null) {
      logger.warn({}, 'cluster bus: unreadable message ignored');
      return;
    }
    const { id, from, topic, payload, ack } = envelope;
    // Our own message: its handlers ran in `publish`; this copy is our acknowledgement.
    if (from === nodeId) return ack ? acknowledged(id) : undefined;
    if (!isValidPayload(topic, payload)) {
      logger.warn({ topic }, 'cluster bus: message with an invalid payload ignored');
      return;
    }
    await handlers.run(topic, payload);
    if (!ack) return;
    try {
      await redis.publish(`${options.keyPrefix}bus:ack:${from}`, id);
    } catch (err) {
      logger.warn({ topic, err: { message: errorMessage(err) } }, 'cluster bus: acknowledgement not sent');
    }
  };

  sub.on('message', (source: string, message: string) => {
    if (source === ackChannel) acknowledged(message);
    else if (source === channel || followedChannels.has(source)) void received(message);
  });

  const subscribe = async (): Promise<void> => {
    try {
      // The followed topics too: a (re)connection subscribes afresh (autoResubscribe is off).
      await sub.subscribe(channel, ackChannel, ...[...following.keys()].map(followedChannel));
      if (closed) return;
      live = true;
      for (const listener of resumeListeners) listener();
    } catch {
      // not live: the next 'ready' tries again
    }
  };
  let subscribing: Promise<void> | undefined;
  sub.on('ready', () => {
    subscribing = subscribe();
  });
  // A Redis that is down does not stop the node from starting: it goes on, not live, after a while.
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, options.startupWaitMs ?? 3000);
    sub.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  await subscribing;

  /** To the other nodes, and waits (bounded) for each one's acknowledgement. */
  const crossNodes = async (topic: BusTopic, payload: unknown): Promise<void> => {
    const id = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await new Promise<'acknowledged' | 'timeout' | 'failed'>((resolve) => {
      const entry: Pending = { acks: 0, expected: undefined, settle: resolve };
      pending.set(id, entry);
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
      const envelope: Envelope = { id, from: nodeId, topic, payload };
      redis.publish(channel, JSON.stringify(envelope)).then(
        (receivers) => {
          entry.expected = receivers;
          if (entry.acks >= receivers) resolve('acknowledged');
        },
        (err: unknown) => {
          logger.warn({ topic, err: { message: errorMessage(err) } }, 'cluster bus: message not sent to the other nodes');
          resolve('failed');
        },
      );
    });
    const entry = pending.get(id);
    pending.delete(id);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      logger.warn({ topic, answered: entry?.acks, expected: entry?.expected }, 'cluster bus: not acknowledged by every node in time; they apply it when they read it');
    }
  };

  return {
    get live() {
      return live;
    },
    async publish<T extends BusTopic>(topic: T, payload: BusPayload<T>) {
      await Promise.all([handlers.run(topic, payload), crossNodes(topic, payload)]);
    },
    notify(topic, payload) {
      const envelope: Envelope = { id: randomUUID(), from: nodeId, topic, payload, ack: false };
      redis.publish(isFollowedTopic(topic) ? followedChannel(topic) : channel, JSON.stringify(envelope)).catch((err: unknown) => {
        logger.warn({ topic, err: { message: errorMessage(err) } }, 'cluster bus: notification not sent to the other nodes');
      });
    },
    subscribe: (topic, handler) => handlers.add(topic, handler),
    follow(topic) {
      const held = following.get(topic);
      if (held !== undefined) {
        held.count++;
        clearTimeout(held.linger);
        return held.subscribed;
      }
      // Bounded: a Redis that is away must not hold the caller (its reconnection subscribes again).
      let timer: NodeJS.Timeout | undefined;
      const subscribed = Promise.race([
        sub.subscribe(followedChannel(topic)).then(() => undefined, () => undefined),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, FOLLOW_WAIT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      following.set(topic, { count: 1, subscribed });
      return subscribed;
    },
    unfollow(topic) {
      const held = following.get(topic);
      if (held === undefined || held.count === 0 || --held.count > 0) return;
      held.linger = setTimeout(() => {
        following.delete(topic);
        sub.unsubscribe(followedChannel(topic)).catch(() => undefined);
      }, options.followLingerMs ?? FOLLOW_LINGER_MS);
      held.linger.unref();
    },
    onResume(listener) {
      resumeListeners.push(listener);
    },
    async close() {
      closed = true;
      live = false;
      stopWatching();
      for (const held of following.values()) clearTimeout(held.linger);
      for (const entry of pending.values()) entry.settle('failed');
      sub.disconnect();
    },
  };
}
