import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config/config.js';
import { AppError } from '../errors.js';

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
 * A refused admission as the error every transport gives (REST, WebSocket, MCP through REST's hook):
 * over a limit `RATE_LIMITED` with the transport's text; the limiter's store (Redis) failed
 * `UNAVAILABLE`, refusing rather than running unlimited. The caller counts and logs.
 */
export function admissionRefusal(admission: Exclude<Admission, { admitted: true }>, limitedText: string): AppError {
  return admission.reason === 'limited' ? new AppError('RATE_LIMITED', limitedText) : new AppError('UNAVAILABLE', 'Rate limiter unavailable');
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

/**
 * An agent's WebSocket event budget over all its connections and nodes (its limiter, in Redis when
 * shared), taken in shares: a node takes `shareSize` points of the limiter's current window in one
 * call and admits that many of the agent's events from memory, synchronously, until the window ends.
 * One limiter call (a Redis round trip with several nodes) per share instead of per event: it was
 * about 9 % of a message's busy time on a node of two (bench/profile.js --nodes=2).
 *
 * Never more than the budget in a window: the points are counted in the limiter when taken. A share
 * that crosses the limit keeps the points of it that were within (the limiter counted them all), and
 * the node then refuses the agent's events until the window ends without asking again. What a node
 * took and did not use when the window ends is lost, so an agent at its limit with connections on n
 * nodes may be refused up to n x (shareSize - 1) events early in a window. While the limiter's store is
 * away (`usable` false) no share is used: every event asks the store, and is refused UNAVAILABLE.
 */
export interface SharedEventBudget {
  /** One event of `key`'s: decided at once from this node's share when it can be, else once the limiter answered. */
  take(key: string): Admission | Promise<Admission>;
}

interface Share {
  /** Points of the limiter's current window taken by this node and not used yet. */
  left: number;
  /** When that window ends (Date.now() time; never later than the limiter's own end). */
  until: number;
  /** The window has no points left on any node: refused until it ends. */
  spent: boolean;
  /** The share being taken: the agent's later events wait for it, in their order. */
  taking: Promise<Admission> | undefined;
}

const ADMITTED: Admission = { admitted: true };
const LIMITED: Admission = { admitted: false, reason: 'limited' };
/** Shares of ended windows are dropped once this many are held (at most once a second). */
const SHARES_KEPT = 10_000;

class ShareTaker implements SharedEventBudget {
  private readonly shares = new Map<string, Share>();
  private lastPrune = 0;

  constructor(
    private readonly limiter: RateLimiterAbstract,
    private readonly shareSize: number,
    private readonly usable: () => boolean,
    private readonly now: () => number,
  ) {}

  take(key: string): Admission | Promise<Admission> {
    if (!this.usable()) {
      this.shares.delete(key);
      return admit([this.limiter, key]);
    }
    const share = this.shares.get(key);
    if (share?.taking !== undefined) return share.taking.then(() => this.take(key));
    if (share !== undefined && this.now() < share.until) {
      if (share.left > 0) {
        share.left--;
        return ADMITTED;
      }
      if (share.spent) return LIMITED;
    }
    return this.takeShare(key, share ?? { left: 0, until: 0, spent: false, taking: undefined });
  }

  private takeShare(key: string, share: Share): Promise<Admission> {
    const size = this.shareSize;
    const asked = this.now();
    share.taking = this.limiter.consume(key, size).then(
      (res): Admission => {
        Object.assign(share, { left: size - 1, until: asked + res.msBeforeNext, spent: res.remainingPoints === 0, taking: undefined });
        return ADMITTED;
      },
      (err: unknown): Admission => {
        if (!isOverLimit(err)) {
          this.shares.delete(key);
          return { admitted: false, reason: 'unavailable', error: err };
        }
        // Counted whole by the limiter: the points of the share that were still within the window are ours.
        const within = this.limiter.points - (err.consumedPoints - size);
        Object.assign(share, { left: Math.max(0, within - 1), until: asked + err.msBeforeNext, spent: true, taking: undefined });
        return within > 0 ? ADMITTED : LIMITED;
      },
    );
    this.shares.set(key, share);
    this.prune(asked);
    return share.taking;
  }

  private prune(now: number): void {
    if (this.shares.size <= SHARES_KEPT || now - this.lastPrune < 1000) return;
    this.lastPrune = now;
    for (const [key, share] of this.shares) if (share.taking === undefined && share.until <= now) this.shares.delete(key);
  }
}

/** Shares of about an eighth of the budget, at most 16 events (1 when the budget is under 16: every event asks). */
export function createSharedEventBudget(limiter: RateLimiterAbstract, usable: () => boolean = () => true, now: () => number = Date.now): SharedEventBudget {
  return new ShareTaker(limiter, Math.max(1, Math.min(16, Math.floor(limiter.points / 8))), usable, now);
}
