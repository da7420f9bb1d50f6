import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from './config/config.js';

/**
 * Every rate limit of the service, REST and WebSocket, built here from the configuration: counters in
 * memory by default and in Redis when configured (then shared by every node), one interface chosen at
 * wiring time. The REST hook (http/plugins/auth.ts) and the WebSocket guard
 * (realtime/connection/event-guard.ts) only consume them, through `admit`.
 */
export interface RateLimits {
  /** REST, per IP, without a valid session. */
  restAnon: RateLimiterAbstract;
  /** REST, per agent. */
  restAgent: RateLimiterAbstract;
  /** WebSocket events, per connection: a budget of the connection's own, in memory (see EventBudget). */
  connectionEvents(): EventBudget;
  /**
   * WebSocket events, per agent over all its connections: what one agent can make the server do and
   * send to others stays bounded however many sockets it opens.
   */
  wsAgentEvents: RateLimiterAbstract;
  /** Per connection: the sustained-abuse rule (docs/websocket.md, Limits), which disconnects. */
  abuseDetector(): AbuseDetector;
  /** Counters shared by every node (Redis): an agent's other connections may be on other nodes. */
  shared: boolean;
}

/** An agent's event budget per second, as a number of connections' worth of `ws.eventsPerSecond`. */
export const WS_AGENT_EVENTS_CONNECTIONS = 4;

/** The Redis key prefix of one limiter: `<REDIS_KEY_PREFIX>rl:<name>`, then `:<agent id or IP>`. */
export const rateLimitKeyPrefix = (config: Pick<Config, 'redisKeyPrefix'>, name: string): string => `${config.redisKeyPrefix}rl:${name}`;

export function createRateLimits(config: Config, redis: Redis | null): RateLimits {
  const make = (name: string, points: number, duration: number): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({
          storeClient: redis,
          keyPrefix: rateLimitKeyPrefix(config, name),
          points,
          duration,
          useRedisPackage: false,
          // While Redis is away, refuse at once (the caller answers 503) instead of waiting on it.
          rejectIfRedisNotReady: true,
        })
      : new RateLimiterMemory({ keyPrefix: name, points, duration });
  return {
    restAnon: make('rest-anon', config.rateLimit.anonPerMinute, 60),
    restAgent: make('rest-agent', config.rateLimit.agentPerMinute, 60),
    connectionEvents: () => createEventBudget(config.ws.eventsPerSecond),
    wsAgentEvents: make('ws-agent-events', config.ws.eventsPerSecond * WS_AGENT_EVENTS_CONNECTIONS, 1),
    abuseDetector: () => createAbuseDetector(config.ws.abuseEventsPerSecond, config.ws.abuseSeconds),
    shared: redis !== null,
  };
}

/** rate-limiter-flexible rejects with a RateLimiterRes when over the limit, and with an Error when its store fails. */
export const isOverLimit = (err: unknown): err is RateLimiterRes => err instanceof RateLimiterRes;

export type Admission = { admitted: true } | { admitted: false; reason: 'limited' } | { admitted: false; reason: 'unavailable'; error: unknown };

/** Takes one point from each `[limiter, key]`; refused when any is over its limit or its store failed. */
export async function admit(...checks: readonly (readonly [RateLimiterAbstract, string])[]): Promise<Admission> {
  const outcomes = await Promise.allSettled(checks.map(([limiter, key]) => limiter.consume(key)));
  let storeError: { error: unknown } | undefined;
  for (const outcome of outcomes) {
    if (outcome.status === 'fulfilled') continue;
    if (isOverLimit(outcome.reason)) return { admitted: false, reason: 'limited' };
    storeError ??= { error: outcome.reason };
  }
  return storeError ? { admitted: false, reason: 'unavailable', error: storeError.error } : { admitted: true };
}

/**
 * A connection's own event budget: at most `eventsPerSecond` events in a one-second window that
 * starts with the first event after the previous one ended (the rule of a rate-limiter-flexible
 * limiter of that many points over one second). In memory whatever store the other limits use: a
 * connection lives on one node, so its counter has nobody to be shared with. Synchronous, O(1):
 * it is consulted for every WebSocket event, and the library's promise per `consume` was most of
 * the cost of admitting one (docs/benchmarks.md).
 */
export interface EventBudget {
  /** Counts one event; false when it is over the budget. */
  take(): boolean;
}

export function createEventBudget(eventsPerSecond: number, now: () => number = Date.now): EventBudget {
  let windowEnd = -Infinity;
  let used = 0;
  return {
    take() {
      const t = now();
      if (t >= windowEnd) {
        windowEnd = t + 1000;
        used = 0;
      }
      used++;
      return used <= eventsPerSecond;
    },
  };
}

export interface AbuseDetector {
  /** Counts one event; true when the connection is to be dropped for sustained abuse. */
  hit(): boolean;
}

/**
 * Sustained-abuse detection (docs/websocket.md, Limits): every event the client sends counts, refused ones
 * included, in one-second buckets; more than `eventsPerSecond` in each of more than `seconds`
 * consecutive buckets trips it. O(1) per event: a bucket is judged the moment it goes over.
 */
export function createAbuseDetector(eventsPerSecond: number, seconds: number, now: () => number = Date.now): AbuseDetector {
  let bucket = -1;
  let count = 0;
  let lastOverBucket = -2;
  let streak = 0;
  return {
    hit() {
      const second = Math.floor(now() / 1000);
      if (second !== bucket) {
        bucket = second;
        count = 0;
      }
      count++;
      if (count === eventsPerSecond + 1) {
        streak = lastOverBucket === second - 1 ? streak + 1 : 1;
        lastOverBucket = second;
      }
      return lastOverBucket === second && streak > seconds;
    },
  };
}
