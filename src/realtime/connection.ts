import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { MessagesService } from '../core/messages/messages.service.js';
import type { SessionsService } from '../core/auth/sessions.service.js';
import type { RoomsService } from '../core/rooms/rooms.service.js';
import { AppError } from '../errors.js';
import type { Metrics } from '../ops/metrics.js';
import type { RateLimits } from '../rate-limits.js';
import { registerEvent, toWsError } from './event-handler.js';
import { messageHandlers } from './handlers/messages.handlers.js';
import { roomHandlers } from './handlers/rooms.handlers.js';
import { authenticateHandshake } from './handshake.js';
import { SerialQueue, type InFlight } from './in-flight.js';
import { guardEvents } from './limits.js';
import { agentChannel, tokenChannel, type ClientEventName } from './protocol.js';
import type { AgentSocket, Subscriptions } from './subscriptions.js';

export interface ConnectionDeps {
  config: Config['ws'];
  logger: Logger;
  metrics: Metrics;
  rateLimits: RateLimits;
  sessions: SessionsService;
  rooms: RoomsService;
  messages: MessagesService;
  subscriptions: Subscriptions;
  inFlight: InFlight;
  isClosing(): boolean;
}

/**
 * The `/agents` connection handler. Authentication happens here rather than in a middleware so that
 * a failure reaches the client as an `error` event `AUTH_FAILED` followed by a server disconnect
 * (DESIGN.md), not as a `connect_error`; no other handler is ever registered for such a socket.
 *
 * Event handlers are registered synchronously, before any await, so nothing the client sends right
 * after `connect` is lost; they run in the socket's serial queue behind the setup (auto-join,
 * presence, `agent:hello-ack`) and ahead of the teardown.
 */
export function createConnectionHandler(deps: ConnectionDeps): (socket: AgentSocket) => void {
  const { logger, metrics, subscriptions } = deps;
  const handlers: Record<ClientEventName, Parameters<typeof registerEvent>[4]> = {
    ...roomHandlers({ rooms: deps.rooms, subscriptions }),
    ...messageHandlers({ messages: deps.messages }),
  };

  return (socket) => {
    if (deps.isClosing()) {
      socket.emit('error', { code: 'UNAVAILABLE', message: 'Server is shutting down; reconnect shortly' });
      socket.disconnect(true);
      return;
    }
    try {
      socket.data.principal = authenticateHandshake(deps.sessions, socket.handshake);
    } catch (err) {
      const message = err instanceof AppError ? err.message : 'Authentication failed';
      socket.emit('error', { code: 'AUTH_FAILED', message });
      socket.disconnect(true);
      return;
    }
    const { agentId, tokenId } = socket.data.principal;
    // Joined at once, so a membership change published during the setup below already finds the socket.
    socket.join(tokenId === undefined ? agentChannel(agentId) : [agentChannel(agentId), tokenChannel(tokenId)]);
    metrics.agentsConnected.inc();
    const log = logger.child({ agentId, socketId: socket.id });
    log.debug('websocket connected');

    const queue = new SerialQueue(deps.inFlight);
    guardEvents(socket, queue, { config: deps.config, limiter: deps.rateLimits.wsEvents, metrics, logger: log, isClosing: deps.isClosing });
    for (const [name, spec] of Object.entries(handlers)) registerEvent(socket, queue, { metrics, logger: log }, name as ClientEventName, spec);

    queue.push(async () => {
      try {
        const roomIds = (await deps.rooms.listForAgent(agentId)).map((room) => room.id);
        const subscribed = await subscriptions.connect(socket, roomIds, deps.config.maxConnectionsPerAgent);
        if (!subscribed && socket.connected) {
          metrics.rateLimitExceeded.inc({ transport: 'ws' });
          socket.emit('error', { code: 'RATE_LIMIT_EXCEEDED', message: `Too many connections for this agent (at most ${deps.config.maxConnectionsPerAgent})` });
          socket.disconnect(true);
          return;
        }
        // A membership removed between the read above and the join found the socket not yet in the
        // room (its socketsLeave was a no-op): read again and leave what is no longer ours. Removals
        // committed after this read find the socket joined and unsubscribe it themselves.
        const current = new Set((await deps.rooms.listForAgent(agentId)).map((room) => room.id));
        for (const roomId of roomIds) if (!current.has(roomId)) await subscriptions.leave(socket, roomId);
      } catch (err) {
        socket.emit('error', toWsError(err, log, 'connect'));
        socket.disconnect(true);
      }
    });

    socket.on('disconnect', (reason) => {
      metrics.agentsConnected.dec();
      log.debug({ reason }, 'websocket disconnected');
      queue.push(async () => {
        try {
          await subscriptions.disconnect(socket);
        } catch (err) {
          log.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'presence update on disconnect failed');
        }
      });
    });
  };
}
