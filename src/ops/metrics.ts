import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DomainEvent, EventPublisher } from '../core/events.js';

/** The service's own metrics (docs/protocol.md, Metrics) plus Node's default process metrics, on a registry of our own. */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  wsLatency: Histogram<'event'>;
  messages: Counter<'room'>;
  agentsConnected: Gauge;
  /** WebSocket connections this process admits at most (its open-file limit less a reserve); unset when unknown. */
  connectionCapacity: Gauge;
  /** Handshakes refused because the process held as many connections as its capacity. */
  connectionsRefused: Counter;
  rateLimitExceeded: Counter<'transport'>;
  /** Webhook delivery attempts by outcome: delivered, retry (failed, to be tried again), failed (for good). */
  webhookDeliveries: Counter<'outcome'>;
  /** Counts messages as they are published after commit, whichever transport sent them. */
  publisher: EventPublisher;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Messages are counted per room here and added to the counter when it is read (prom-client calls
  // `collect` on every scrape) rather than through prom-client's label hashing per message (0.6 % of
  // the main thread at 1,000 msg/s, perf).
  const unscraped = new Map<string, number>();
  const messages = new Counter({
    name: 'service_messages_total',
    help: 'Messages sent, by room',
    labelNames: ['room'],
    registers: [registry],
    collect() {
      for (const [room, count] of unscraped) this.inc({ room }, count);
      unscraped.clear();
    },
  });
  return {
    registry,
    httpRequests: new Counter({
      name: 'service_http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    wsLatency: new Histogram({
      name: 'service_websocket_latency_seconds',
      help: 'WebSocket event processing time',
      labelNames: ['event'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    messages,
    agentsConnected: new Gauge({ name: 'service_agents_connected', help: 'Active WebSocket connections', registers: [registry] }),
    connectionCapacity: new Gauge({ name: 'service_websocket_connection_capacity', help: 'WebSocket connections this process admits at most (open-file limit less a reserve)', registers: [registry] }),
    connectionsRefused: new Counter({ name: 'service_websocket_connections_refused_total', help: 'Handshakes refused at the connection capacity', registers: [registry] }),
    rateLimitExceeded: new Counter({
      name: 'rate_limit_exceeded_total',
      help: 'Rate-limit rejections',
      labelNames: ['transport'],
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'service_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (delivered, retry, failed)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    publisher: {
      publish(event: DomainEvent) {
        if (event.type === 'message.created') unscraped.set(event.message.roomId, (unscraped.get(event.message.roomId) ?? 0) + 1);
      },
    },
  };
}
