import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  BUS_ACK_TIMEOUT_MS, isBusTopic, isValidPayload, LocalHandlers,
  type BusLogger, type BusPayload, type BusTopic, type ClusterBus,
} from './bus.js';
import { watchRedisConnection } from './redis-watchdog.js';

/**
 * The cluster bus on Redis pub/sub. Channels, under config.redisKeyPrefix:
 *   bus              every message: {id, from, topic, payload}; every node subscribes
 *   bus:ack:<node>   the acknowledgements of one node's messages: the message id
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
    else if (source === channel) void received(message);
  });

  const subscribe = async (): Promise<void> => {
    try {
      await sub.subscribe(channel, ackChannel);
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
      redis.publish(channel, JSON.stringify(envelope)).catch((err: unknown) => {
        logger.warn({ topic, err: { message: errorMessage(err) } }, 'cluster bus: notification not sent to the other nodes');
      });
    },
    subscribe: (topic, handler) => handlers.add(topic, handler),
    onResume(listener) {
      resumeListeners.push(listener);
    },
    async close() {
      closed = true;
      live = false;
      stopWatching();
      for (const entry of pending.values()) entry.settle('failed');
      sub.disconnect();
    },
  };
}
