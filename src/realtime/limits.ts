import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config/config.js';
import type { Metrics } from '../ops/metrics.js';
import { isOverLimit } from '../rate-limits.js';
import { reply, requestIdOf, splitArgs, type Ack } from './event-handler.js';
import type { SerialQueue } from './in-flight.js';
import { CLIENT_EVENTS, type WsError } from './protocol.js';
import type { AgentSocket } from './subscriptions.js';

/**
 * Sustained-abuse detection (DESIGN.md section 3): every event the client sends counts, refused ones
 * included, in one-second buckets; more than `eventsPerSecond` in each of more than `seconds`
 * consecutive buckets trips it. O(1) per event: a bucket is judged the moment it goes over.
 */
export function createAbuseDetector(eventsPerSecond: number, seconds: number, now: () => number = Date.now): { hit(): boolean } {
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

export interface GuardDeps {
  config: Config['ws'];
  limiter: RateLimiterAbstract;
  metrics: Metrics;
  logger: Logger;
  /** True once a graceful shutdown began: new events are refused, in-flight ones finish. */
  isClosing(): boolean;
}

const KNOWN_EVENTS = new Set<string>(CLIENT_EVENTS);

/**
 * Runs before any handler, for every event of the socket: abuse detection, shutdown, the per-socket
 * event rate (rate-limiter-flexible, memory or Redis), the queue bound and unknown event names.
 * A refused event is not processed; the socket gets an `error` event (with `requestId`) and, when the
 * event carried an acknowledgement callback, the acknowledgement gets the same error.
 */
export function guardEvents(socket: AgentSocket, queue: SerialQueue, deps: GuardDeps): void {
  const { config, limiter, metrics, logger } = deps;
  const abuse = createAbuseDetector(config.abuseEventsPerSecond, config.abuseSeconds);
  // Generous: only a stalled dependency lets this many pile up behind a rate-limited client.
  const maxPending = Math.max(100, 4 * config.eventsPerSecond);

  socket.use((packet, next) => {
    if (!socket.connected) return;
    const [event, ...args] = packet as unknown[];
    const { payload, ack } = splitArgs(args);
    const requestId = requestIdOf(payload);
    const refuse = (error: WsError, extraAck?: Ack): void => {
      socket.emit('error', requestId === undefined ? error : { ...error, requestId });
      extraAck?.({ error });
    };

    if (abuse.hit()) {
      metrics.rateLimitExceeded.inc({ transport: 'ws' });
      logger.warn({ agentId: socket.data.principal.agentId }, 'websocket disconnected for sustained event abuse');
      refuse({
        code: 'RATE_LIMIT_EXCEEDED',
        message: `Disconnected: more than ${config.abuseEventsPerSecond} events per second for more than ${config.abuseSeconds} seconds`,
      }, ack);
      socket.disconnect(true);
      return;
    }
    if (deps.isClosing()) {
      reply(socket, { code: 'UNAVAILABLE', message: 'Server is shutting down; reconnect shortly' }, ack, requestId);
      return;
    }

    limiter.consume(socket.id).then(
      () => {
        if (!socket.connected) return;
        if (typeof event !== 'string' || !KNOWN_EVENTS.has(event)) {
          const name = String(event).slice(0, 64);
          reply(socket, { code: 'VALIDATION_ERROR', message: `Unknown event "${name}"; known events: ${CLIENT_EVENTS.join(', ')}` }, ack, requestId);
          return;
        }
        if (queue.pending >= maxPending) {
          metrics.rateLimitExceeded.inc({ transport: 'ws' });
          refuse({ code: 'RATE_LIMIT_EXCEEDED', message: 'Too many events waiting on this connection' }, ack);
          return;
        }
        next();
      },
      (err: unknown) => {
        if (isOverLimit(err)) {
          metrics.rateLimitExceeded.inc({ transport: 'ws' });
          refuse({ code: 'RATE_LIMIT_EXCEEDED', message: `Too many events: at most ${config.eventsPerSecond} per second per connection` }, ack);
          return;
        }
        // The limiter's store (Redis) failed: refuse rather than run unlimited, as REST does.
        logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'websocket rate limiter unavailable');
        reply(socket, { code: 'UNAVAILABLE', message: 'Rate limiter unavailable' }, ack, requestId);
      },
    );
  });
}
