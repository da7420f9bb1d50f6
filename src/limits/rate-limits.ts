import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config/config.js';

/**
 * The rate limiters' pieces: one limiter per name (in memory, or in Redis and then shared by every
 * node), `admit` (what every transport calls to take points), a connection's own event budget and
 * the abuse detector. src/limits/index.ts builds them from the configuration.
 */

/** An agent's event budget per second, as a number of connections' worth of `ws.eventsPerSecond`. */
export const WS_AGENT_EVENTS_CONNECTIONS = 4;

/** The Redis key prefix of one limiter: `<REDIS_KEY_PREFIX>rl:<name>`, then `:<agent id or IP>`. */
export const rateLimitKeyPrefix = (config: Pick<Config, 'redisKeyPrefix'>, name: string): string => `${config.redisKeyPrefix}rl:${name}`;

/** A limiter of `points` per `duration` seconds: in Redis when given one (shared by every node), in memory otherwise. */
export function createLimiter(config: Pick<Config, 'redisKeyPrefix'>, redis: Redis | null, name: string, points: number, duration: number): RateLimiterAbstract {
  return redis
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
}

/** rate-limiter-flexible rejects with a RateLimiterRes when over the limit, and with an Error when its store fails. */
export const isOverLimit = (err: unknown): err is RateLimiterRes => err instanceof RateLimiterRes;

export type Admission = { admitted: true } | { admitted: false; reason: 'limited' } | { admitted: false; reason: 'unavailable'; error: unknown };

/**
 * Takes points (one unless told) from each `[limiter, key, points?]`; refused when any is over its
 * limit or its store failed.
 */
export async function admit(...checks: readonly (readonly [RateLimiterAbstract, string, number?])[]): Promise<Admission> {
  const outcomes = await Promise.allSettled(checks.map(([limiter, key, points]) => limiter.consume(key, points ?? 1)));
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

// Both per-connection counters are classes: a few fields in one object per held connection, where
// closures cost each a function and its scope (bench/heap-per-connection.js).
class WindowBudget implements EventBudget {
  private windowEnd = -Infinity;
  private used = 0;

  constructor(private readonly eventsPerSecond: number, private readonly now: () => number) {}

  take(): boolean {
    const t = this.now();
    if (t >= this.windowEnd) {
      this.windowEnd = t + 1000;
      this.used = 0;
    }
    this.used++;
    return this.used <= this.eventsPerSecond;
  }
}

export function createEventBudget(eventsPerSecond: number, now: () => number = Date.now): EventBudget {
  return new WindowBudget(eventsPerSecond, now);
}

export interface AbuseDetector {
  /** Counts one event; true when the connection is to be dropped for sustained abuse. */
  hit(): boolean;
}

/**
 * Sustained-abuse detection (docs/websocket.md): every event the client sends counts, refused ones
 * included, in one-second buckets; more than `eventsPerSecond` in each of more than `seconds`
 * consecutive buckets trips it. O(1) per event: a bucket is judged the moment it goes over.
 */
class StreakDetector implements AbuseDetector {
  private bucket = -1;
  private count = 0;
  private lastOverBucket = -2;
  private streak = 0;

  constructor(private readonly eventsPerSecond: number, private readonly seconds: number, private readonly now: () => number) {}

  hit(): boolean {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.bucket) {
      this.bucket = second;
      this.count = 0;
    }
    this.count++;
    if (this.count === this.eventsPerSecond + 1) {
      this.streak = this.lastOverBucket === second - 1 ? this.streak + 1 : 1;
      this.lastOverBucket = second;
    }
    return this.lastOverBucket === second && this.streak > this.seconds;
  }
}

export function createAbuseDetector(eventsPerSecond: number, seconds: number, now: () => number = Date.now): AbuseDetector {
  return new StreakDetector(eventsPerSecond, seconds, now);
}
