import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import { AppError } from '../../errors.js';
import type { Metrics } from '../../ops/metrics.js';
import type { Admission, Limits } from '../../limits/index.js';
import { admissionRefusal, type AbuseDetector, type EventBudget } from '../../limits/rate-limits.js';
import { webSocketOf, type RawWebSocket } from '../outbound/slow-consumers.js';
import { agentChannel, CLIENT_EVENTS, type AgentSocket } from '../protocol.js';
import { requestIdOf, splitArgs, type EventRunner } from './register-event.js';
import type { SerialQueue } from './serial-queue.js';
import { endConnection, refuse, reply, socketFields, toWsError } from './ws-errors.js';

/** What every socket's guard shares: made once per server. */
export interface GuardDeps {
  config: Config['ws'];
  limits: Limits;
  metrics: Metrics;
  logger: Logger;
  /** True once a graceful shutdown began: new events are refused, in-flight ones finish. */
  isClosing(): boolean;
  /** Hands an admitted event (`[name, ...args]`) to its handler (register-event.ts). */
  run: EventRunner;
}

const KNOWN_EVENTS = new Set<string>(CLIENT_EVENTS);

/**
 * A paused WebSocket still delivers the frames of the read it already made (up to 64 KiB of the
 * smallest events, about 16 bytes each); a long-polling transport cannot be paused at all. Beyond
 * the bound plus that much, events are refused.
 */
const PAUSE_OVERSHOOT = 4096;

const guards = new WeakMap<AgentSocket, EventGuard>();

/** Events of this socket received and not yet answered (for tests and diagnostics). */
export function eventsInFlightOf(socket: AgentSocket): number {
  return guards.get(socket)?.inFlight() ?? 0;
}

/**
 * Runs before any handler, for every event of the socket: abuse detection, shutdown, the event rate
 * per connection and per agent (limiters of src/limits/), the in-flight bound and unknown
 * event names. A refused event is not processed; each refusal is an AppError of the catalog, answered
 * as any error is (ws-errors.ts): into the acknowledgement when there is one, as an `error` event
 * (with `requestId`) otherwise; rate refusals go both ways. An admitted event is handed to its
 * handler from here (`deps.run`), so a socket registers no listener per event name.
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
  const guard = new EventGuard(socket, queue, deps);
  guards.set(socket, guard);
  queue.whenSettled(guard);
  socket.use(guard.check.bind(guard));
}

/**
 * One socket's guard, a class rather than closures: it lives as long as the connection, and one
 * object with fields is a fraction of the functions and scopes closures would hold per connection
 * (bench/heap-per-connection.js).
 */
class EventGuard {
  private readonly abuse: AbuseDetector;
  private readonly ownBudget: EventBudget;
  /** In the agent's rate limiter, not yet handed to their handlers. */
  private admitting = 0;
  /** The WebSocket this guard stopped reading, until it resumes it. */
  private paused: RawWebSocket | undefined = undefined;

  constructor(
    private readonly socket: AgentSocket,
    private readonly queue: SerialQueue,
    private readonly deps: GuardDeps,
  ) {
    this.abuse = deps.limits.abuseDetector();
    this.ownBudget = deps.limits.connectionEvents();
  }

  inFlight(): number {
    return this.admitting + this.queue.pending;
  }

  /** A task of the queue finished (serial-queue.ts `whenSettled`). */
  settled(): void {
    const { paused } = this;
    if (paused === undefined || this.inFlight() >= Math.max(1, Math.floor((this.deps.limits.eventsInFlight * 3) / 4))) return;
    paused.resume();
    this.paused = undefined;
  }

  /**
   * The agent's budget (several connections' worth) cannot bind while this is its only connection
   * and every connection is on this node: the connection's own budget is smaller. So in that common
   * case an event is admitted synchronously, by the connection's budget alone; once the agent opens
   * another connection, or counters are shared (Redis), the agent's budget is consulted too.
   */
  private agentBudgetMayBind(): boolean {
    return this.deps.limits.shared || (this.socket.nsp.adapter.rooms.get(agentChannel(this.socket.data.principal.agentId))?.size ?? 0) > 1;
  }

  /** Socket.IO's middleware for each event packet (`[name, ...args, ack?]`); `next` is never called: admitted events go to `deps.run`. */
  check(packet: unknown[]): void {
    const { socket, deps } = this;
    const { config, limits, logger } = deps;
    if (!socket.connected) return;
    const maxInFlight = limits.eventsInFlight;
    if (this.paused === undefined && this.inFlight() + 1 >= maxInFlight) {
      this.paused = webSocketOf(socket);
      this.paused?.pause();
    }
    const event = packet[0];
    if (this.abuse.hit()) {
      logger.warn(socketFields(socket), 'websocket disconnected for sustained event abuse');
      this.refuse(packet, new AppError('RATE_LIMITED', `Disconnected: more than ${config.abuseEventsPerSecond} events per second for more than ${config.abuseSeconds} seconds`));
      endConnection(socket, 'RATE_LIMIT_EXCEEDED');
      return;
    }
    if (deps.isClosing()) return this.refuse(packet, new AppError('UNAVAILABLE', 'Server is shutting down; reconnect shortly'));

    if (this.inFlight() >= maxInFlight + PAUSE_OVERSHOOT) return this.refuse(packet, new AppError('RATE_LIMITED', 'Too many events waiting on this connection'));
    if (!this.ownBudget.take()) return this.refuse(packet, new AppError('RATE_LIMITED', tooManyText(config)));
    if (typeof event !== 'string' || !KNOWN_EVENTS.has(event)) {
      return this.refuse(packet, new AppError('VALIDATION_ERROR', `Unknown event "${typeof event === 'string' ? event.slice(0, 64) : String(event)}"; known events: ${CLIENT_EVENTS.join(', ')}`));
    }
    // Handed over synchronously: its handler queues it at once, so it counts as in flight from here on.
    if (!this.agentBudgetMayBind()) return deps.run(socket, this.queue, packet);
    const admission = limits.agentEvents.take(socket.data.principal.agentId);
    if (!(admission instanceof Promise)) return this.admitted(packet, admission);
    this.admitting++;
    void admission.then((answer) => {
      this.admitting--;
      if (socket.connected) this.admitted(packet, answer);
    });
  }

  /** An event through the agent's budget: run, or refused. */
  private admitted(packet: unknown[], admission: Admission): void {
    if (admission.admitted) return this.deps.run(this.socket, this.queue, packet);
    if (admission.reason === 'unavailable') {
      const { error } = admission;
      this.deps.logger.warn({ ...socketFields(this.socket), err: { message: error instanceof Error ? error.message : String(error) } }, 'websocket rate limiter unavailable');
    }
    this.refuse(packet, admissionRefusal(admission, tooManyText(this.deps.config)));
  }

  /** A refused event's answer; what it needs is read from the packet only then (most events pass). */
  private refuse(packet: unknown[], err: AppError): void {
    const { socket, deps } = this;
    const event = packet[0];
    const { payload, ack } = splitArgs(packet.slice(1));
    const name = typeof event === 'string' ? event.slice(0, 64) : String(event);
    const wsError = toWsError(err, deps.logger, name, socket);
    if (err.code === 'RATE_LIMITED') {
      deps.metrics.rateLimitExceeded.inc({ transport: 'ws' });
      refuse(socket, wsError, ack, requestIdOf(payload));
    } else {
      reply(socket, wsError, ack, requestIdOf(payload));
    }
    // A refused event may have been the last in flight of a paused connection.
    this.settled();
  }
}

function tooManyText(config: Config['ws']): string {
  return `Too many events: at most ${config.eventsPerSecond} per second per connection, and a bounded number per agent`;
}
