import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import { AppError } from '../../errors.js';
import type { Metrics } from '../../ops/metrics.js';
import { admit, type Limits } from '../../limits/index.js';
import { webSocketOf, type RawWebSocket } from '../outbound/slow-consumers.js';
import { agentChannel, CLIENT_EVENTS, type AgentSocket } from '../protocol.js';
import { requestIdOf, splitArgs } from './register-event.js';
import type { SerialQueue } from './serial-queue.js';
import { refuse, reply, toWsError } from './ws-errors.js';

export interface GuardDeps {
  config: Config['ws'];
  limits: Limits;
  metrics: Metrics;
  logger: Logger;
  /** True once a graceful shutdown began: new events are refused, in-flight ones finish. */
  isClosing(): boolean;
}

const KNOWN_EVENTS = new Set<string>(CLIENT_EVENTS);

/**
 * A paused WebSocket still delivers the frames of the read it already made (up to 64 KiB of the
 * smallest events, about 16 bytes each); a long-polling transport cannot be paused at all. Beyond
 * the bound plus that much, events are refused.
 */
const PAUSE_OVERSHOOT = 4096;

const inFlightReaders = new WeakMap<AgentSocket, () => number>();

/** Events of this socket received and not yet answered (for tests and diagnostics). */
export function eventsInFlightOf(socket: AgentSocket): number {
  return inFlightReaders.get(socket)?.() ?? 0;
}

/**
 * Runs before any handler, for every event of the socket: abuse detection, shutdown, the event rate
 * per connection and per agent (limiters of src/limits/), the in-flight bound and unknown
 * event names. A refused event is not processed; each refusal is an AppError of the catalog, answered
 * as any error is (ws-errors.ts): into the acknowledgement when there is one, as an `error` event
 * (with `requestId`) otherwise; rate refusals go both ways.
 *
 * The in-flight bound (`WS_MAX_EVENTS_IN_FLIGHT`): once that many events of the connection are
 * received and not answered (sends are pipelined, so a fast client has many), the server stops
 * reading the connection's WebSocket until a quarter of them are answered. Back-pressure rather
 * than refusal: a well-behaved client that pipelines is slowed by TCP instead of losing messages to
 * errors it must retry, and the server holds at most the bound plus one read's worth of events
 * (PAUSE_OVERSHOOT) whatever the client sends; what it holds for a client that does not read its
 * answers is bounded by WS_MAX_BUFFERED_BYTES (outbound/slow-consumers.ts).
 */
export function guardEvents(socket: AgentSocket, queue: SerialQueue, deps: GuardDeps): void {
  const { config, limits, metrics, logger } = deps;
  const { agentId } = socket.data.principal;
  const abuse = limits.abuseDetector();
  const ownBudget = limits.connectionEvents();
  const maxInFlight = limits.eventsInFlight;
  const resumeBelow = Math.max(1, Math.floor((maxInFlight * 3) / 4));
  let admitting = 0; // in the rate limiter, not yet queued
  let dispatching = 0; // admitted in this read, not yet handed to their handlers
  const dispatched = (): void => {
    dispatching = 0;
  };
  let paused: RawWebSocket | undefined;
  const inFlight = (): number => admitting + dispatching + queue.pending;
  inFlightReaders.set(socket, inFlight);
  const resumeIfDrained = (): void => {
    if (paused === undefined || inFlight() >= resumeBelow) return;
    paused.resume();
    paused = undefined;
  };
  queue.whenSettled(resumeIfDrained);
  // The agent's budget (several connections' worth) cannot bind while this is its only connection
  // and every connection is on this node: the connection's own budget is smaller. So in that common
  // case an event is admitted synchronously, by the connection's budget alone; once the agent opens
  // another connection, or counters are shared (Redis), the agent's budget is consulted too.
  const agentBudget = [limits.wsAgentEvents, agentId] as const;
  const ownChannel = agentChannel(agentId);
  const agentBudgetMayBind = (): boolean => limits.shared || (socket.nsp.adapter.rooms.get(ownChannel)?.size ?? 0) > 1;
  const tooMany = `Too many events: at most ${config.eventsPerSecond} per second per connection, and a bounded number per agent`;

  socket.use((packet, next) => {
    if (!socket.connected) return;
    if (paused === undefined && inFlight() + 1 >= maxInFlight) {
      paused = webSocketOf(socket);
      paused?.pause();
    }
    const event = packet[0] as unknown;
    // A refusal's answer; what it needs is read from the packet only then (most events pass).
    const answer = (err: AppError): void => {
      const { payload, ack } = splitArgs(packet.slice(1));
      const name = typeof event === 'string' ? event.slice(0, 64) : String(event);
      const wsError = toWsError(err, logger, name);
      if (err.code === 'RATE_LIMITED') {
        metrics.rateLimitExceeded.inc({ transport: 'ws' });
        refuse(socket, wsError, ack, requestIdOf(payload));
      } else {
        reply(socket, wsError, ack, requestIdOf(payload));
      }
      // A refused event may have been the last in flight of a paused connection.
      resumeIfDrained();
    };

    if (abuse.hit()) {
      logger.warn({ agentId }, 'websocket disconnected for sustained event abuse');
      answer(new AppError('RATE_LIMITED', `Disconnected: more than ${config.abuseEventsPerSecond} events per second for more than ${config.abuseSeconds} seconds`));
      socket.disconnect(true);
      return;
    }
    if (deps.isClosing()) return answer(new AppError('UNAVAILABLE', 'Server is shutting down; reconnect shortly'));

    if (inFlight() >= maxInFlight + PAUSE_OVERSHOOT) return answer(new AppError('RATE_LIMITED', 'Too many events waiting on this connection'));
    if (!ownBudget.take()) return answer(new AppError('RATE_LIMITED', tooMany));
    if (typeof event !== 'string' || !KNOWN_EVENTS.has(event)) {
      return answer(new AppError('VALIDATION_ERROR', `Unknown event "${typeof event === 'string' ? event.slice(0, 64) : String(event)}"; known events: ${CLIENT_EVENTS.join(', ')}`));
    }
    if (!agentBudgetMayBind()) {
      // Socket.IO hands the event to its handler on the next tick; it counts as in flight until
      // then, or a whole read of frames would pass here before the bound saw any of them. The
      // frames of one read all pass here before any of those ticks: one reset per read.
      if (dispatching++ === 0) process.nextTick(dispatched);
      next();
      return;
    }
    admitting++;
    void admit(agentBudget).then((admission) => {
      admitting--;
      if (!socket.connected) return;
      if (!admission.admitted) {
        if (admission.reason === 'limited') return answer(new AppError('RATE_LIMITED', tooMany));
        // The limiter's store (Redis) failed: refuse rather than run unlimited, as REST does.
        const { error } = admission;
        logger.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'websocket rate limiter unavailable');
        return answer(new AppError('UNAVAILABLE', 'Rate limiter unavailable'));
      }
      next();
    });
  });
}
