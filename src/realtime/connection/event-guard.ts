import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import { AppError } from '../../errors.js';
import type { Metrics } from '../../ops/metrics.js';
import { admit, type RateLimits } from '../../rate-limits.js';
import { CLIENT_EVENTS, type AgentSocket } from '../protocol.js';
import { requestIdOf, splitArgs } from './register-event.js';
import type { SerialQueue } from './serial-queue.js';
import { refuse, reply, toWsError } from './ws-errors.js';

export interface GuardDeps {
  config: Config['ws'];
  rateLimits: RateLimits;
  metrics: Metrics;
  logger: Logger;
  /** True once a graceful shutdown began: new events are refused, in-flight ones finish. */
  isClosing(): boolean;
}

const KNOWN_EVENTS = new Set<string>(CLIENT_EVENTS);

/**
 * Runs before any handler, for every event of the socket: abuse detection, shutdown, the event rate
 * per connection and per agent (limiters of src/rate-limits.ts), the queue bound and unknown event
 * names. A refused event is not processed; each refusal is an AppError of the catalog, answered as
 * any error is (ws-errors.ts): into the acknowledgement when there is one, as an `error` event (with
 * `requestId`) otherwise; rate refusals go both ways.
 */
export function guardEvents(socket: AgentSocket, queue: SerialQueue, deps: GuardDeps): void {
  const { config, rateLimits, metrics, logger } = deps;
  const { agentId } = socket.data.principal;
  const abuse = rateLimits.abuseDetector();
  // Generous: only a stalled dependency lets this many pile up behind a rate-limited client.
  const maxPending = Math.max(100, 4 * config.eventsPerSecond);

  socket.use((packet, next) => {
    if (!socket.connected) return;
    const [event, ...args] = packet as unknown[];
    const { payload, ack } = splitArgs(args);
    const requestId = requestIdOf(payload);
    const name = typeof event === 'string' ? event.slice(0, 64) : String(event);
    const answer = (err: AppError): void => reply(socket, toWsError(err, logger, name), ack, requestId);
    const limited = (message: string): void => {
      metrics.rateLimitExceeded.inc({ transport: 'ws' });
      refuse(socket, toWsError(new AppError('RATE_LIMITED', message), logger, name), ack, requestId);
    };

    if (abuse.hit()) {
      logger.warn({ agentId }, 'websocket disconnected for sustained event abuse');
      limited(`Disconnected: more than ${config.abuseEventsPerSecond} events per second for more than ${config.abuseSeconds} seconds`);
      socket.disconnect(true);
      return;
    }
    if (deps.isClosing()) return answer(new AppError('UNAVAILABLE', 'Server is shutting down; reconnect shortly'));

    void admit([rateLimits.wsEvents, socket.id], [rateLimits.wsAgentEvents, agentId]).then((admission) => {
      if (!socket.connected) return;
      if (!admission.admitted) {
        if (admission.reason === 'limited') {
          return limited(`Too many events: at most ${config.eventsPerSecond} per second per connection, and a bounded number per agent`);
        }
        // The limiter's store (Redis) failed: refuse rather than run unlimited, as REST does.
        const { error } = admission;
        logger.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'websocket rate limiter unavailable');
        return answer(new AppError('UNAVAILABLE', 'Rate limiter unavailable'));
      }
      if (typeof event !== 'string' || !KNOWN_EVENTS.has(event)) {
        return answer(new AppError('VALIDATION_ERROR', `Unknown event "${name}"; known events: ${CLIENT_EVENTS.join(', ')}`));
      }
      if (queue.pending >= maxPending) return limited('Too many events waiting on this connection');
      next();
    });
  });
}
