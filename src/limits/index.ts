import type { Redis } from 'ioredis';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config/config.js';
import { exchangeGateFor, type ExchangeGate } from './exchange-gate.js';
import {
  createAbuseDetector, createEventBudget, createLimiter, createSharedEventBudget, WS_AGENT_EVENTS_CONNECTIONS, type AbuseDetector, type EventBudget, type SharedEventBudget,
} from './rate-limits.js';
import { createWaitSlots, type WaitSlots } from './wait-slots.js';

export { admit, type Admission } from './rate-limits.js';
export type { ExchangeGate } from './exchange-gate.js';
export type { WaitSlots } from './wait-slots.js';

/**
 * Every limit of the service, built here once from the configuration (README.md's configuration
 * table lists the settings). Transports and services only consume them: the REST hook (http/plugins/auth.ts)
 * and the MCP route take rate-limit points through `admit`, the WebSocket connection
 * (realtime/connection/) applies the event budgets, the abuse detector, the in-flight bound, the
 * slow-consumer bound and the connection cap, the session exchange runs in the exchange gate, and
 * every long-poll wait holds one of its agent's wait slots.
 */
export interface Limits {
  /** REST, per IP, without a valid credential (and before an API token's first hash). */
  restAnon: RateLimiterAbstract;
  /** REST and MCP, per agent: one point per request, one per call of a JSON-RPC batch. */
  restAgent: RateLimiterAbstract;
  /** WebSocket events, per connection: a budget of the connection's own, in memory (see EventBudget). */
  connectionEvents(): EventBudget;
  /**
   * WebSocket events, per agent over all its connections: what one agent can make the server do and
   * send to others stays bounded however many sockets it opens. Taken in shares (SharedEventBudget).
   */
  agentEvents: SharedEventBudget;
  /** Per connection: the sustained-abuse rule (docs/websocket.md), which disconnects. */
  abuseDetector(): AbuseDetector;
  /** Live WebSocket connections one agent may hold (over every node when presence is in Redis). */
  connectionsPerAgent: number;
  /** Outgoing bytes a connection may leave unread before it is dropped (realtime/outbound/slow-consumers.ts). */
  slowConsumerBytes: number;
  /** Events of one connection received and not yet answered before the server stops reading it. */
  eventsInFlight: number;
  /** Session exchanges (Argon2id) hashing and waiting; more are refused with 503. */
  exchangeGate: ExchangeGate;
  /** Long-poll waits (inbox, MCP fetch_inbox) one agent may hold at once. */
  waits: WaitSlots;
  /** Counters shared by every node (Redis): an agent's other connections may be on other nodes. */
  shared: boolean;
}

export function createLimits(config: Config, redis: Redis | null): Limits {
  const make = (name: string, points: number, duration: number): RateLimiterAbstract => createLimiter(config, redis, name, points, duration);
  return {
    restAnon: make('rest-anon', config.rateLimit.anonPerMinute, 60),
    restAgent: make('rest-agent', config.rateLimit.agentPerMinute, 60),
    connectionEvents: () => createEventBudget(config.ws.eventsPerSecond),
    // While Redis is away no share is used: events are refused UNAVAILABLE, as REST requests are.
    agentEvents: createSharedEventBudget(make('ws-agent-events', config.ws.eventsPerSecond * WS_AGENT_EVENTS_CONNECTIONS, 1), () => redis === null || redis.status === 'ready'),
    abuseDetector: () => createAbuseDetector(config.ws.abuseEventsPerSecond, config.ws.abuseSeconds),
    connectionsPerAgent: config.ws.maxConnectionsPerAgent,
    slowConsumerBytes: config.ws.maxBufferedBytes,
    eventsInFlight: config.ws.maxEventsInFlight,
    exchangeGate: exchangeGateFor(config.sessionExchangeConcurrency),
    waits: createWaitSlots(config.waitsPerAgent),
    shared: redis !== null,
  };
}
