import { Redis, type RedisOptions } from 'ioredis';
import { watchRedisConnection } from './redis-watchdog.js';

export interface RedisLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Client settings that make a Redis outage fail fast instead of hanging requests:
 * - enableOfflineQueue false: while disconnected a command is refused at once (the rate limiter
 *   then answers 503) rather than queued until Redis returns;
 * - commandTimeout: a Redis that accepts the connection but stops answering costs at most this;
 * - maxRetriesPerRequest: a command caught by a dropped connection is not replayed for long;
 * - the default retryStrategy keeps reconnecting (backing off to 2 s), so the node recovers by
 *   itself when Redis is back.
 */
export const REDIS_CLIENT_DEFAULTS = {
  enableOfflineQueue: false,
  commandTimeout: 1000,
  connectTimeout: 3000,
  maxRetriesPerRequest: 1,
  keepAlive: 10_000,
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 2000),
} as const satisfies RedisOptions;

/*
 * For a Socket.IO adapter subscriber, duplicate this client with `enableOfflineQueue: true` (its
 * SUBSCRIBE must wait for the connection instead of failing at startup) and consider
 * `commandTimeout: undefined` there; keys and channels start with config.redisKeyPrefix.
 */

/** How long startup waits for the first connection before carrying on degraded (readyz fails). */
const STARTUP_WAIT_MS = 3000;

/**
 * Opens the service's Redis connection and waits briefly for it, so a node that starts next to a
 * healthy Redis serves its first requests without 503s. A Redis that is down does not stop the
 * node from starting: /readyz reports it and the client keeps reconnecting.
 */
export async function connectRedis(url: string, logger: RedisLogger, options: RedisOptions = {}): Promise<Redis> {
  const redis = new Redis(url, { ...REDIS_CLIENT_DEFAULTS, ...options });
  // Without a listener, ioredis reports connection errors as unhandled 'error' events.
  let lastError = '';
  redis.on('error', (err: Error) => {
    // One line per distinct failure, not one per reconnect attempt.
    if (err.message !== lastError) logger.warn({ err: { message: err.message } }, 'redis connection error');
    lastError = err.message;
  });
  redis.on('ready', () => {
    if (lastError !== '') logger.info({}, 'redis connection restored');
    lastError = '';
  });
  // A silent cut would otherwise time every command out for good (redis-watchdog.ts); stops by
  // itself once the client is quit (it only pings a ready connection).
  watchRedisConnection(redis, { onStale: () => logger.warn({}, 'redis connection did not answer; reconnecting') });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, STARTUP_WAIT_MS);
    function done(): void {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
    if (redis.status === 'ready') done();
    else redis.once('ready', done);
  });
  return redis;
}
