import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from './config/config.js';

/**
 * Rate limiters, in memory by default and in Redis when configured (then counters are shared by
 * every node). One interface, chosen at wiring time.
 */
export interface RateLimits {
  restAnon: RateLimiterAbstract;
  restAgent: RateLimiterAbstract;
  wsEvents: RateLimiterAbstract;
}

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
    wsEvents: make('ws-events', config.ws.eventsPerSecond, 1),
  };
}

/** rate-limiter-flexible rejects with a RateLimiterRes when over the limit, and with an Error when its store fails. */
export const isOverLimit = (err: unknown): err is RateLimiterRes => err instanceof RateLimiterRes;
