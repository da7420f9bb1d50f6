import type { Logger } from 'pino';
import type { DomainEvent, EventPublisher } from '../core/events.js';
import { roomChannel, tokenChannel, toWsMessage } from './protocol.js';
import type { AgentsNamespace, Subscriptions } from './subscriptions.js';

type Reactions = { [K in DomainEvent['type']]: (event: Extract<DomainEvent, { type: K }>) => void | Promise<void> };

/**
 * The realtime side of the fan-out port: what live sockets see of each domain event, published
 * after commit by whichever transport caused it (a REST-sent message reaches sockets like a
 * WebSocket-sent one). It never fails the caller: the change is committed, and a broadcast problem
 * is logged.
 */
export function createRealtimePublisher(nsp: AgentsNamespace, subscriptions: Subscriptions, logger: Logger): EventPublisher {
  const reactions: Reactions = {
    'message.created': ({ message }) => {
      nsp.to(roomChannel(message.roomId)).emit('message:new', toWsMessage(message));
    },
    'membership.added': ({ agentId, roomId }) => subscriptions.membershipAdded(agentId, roomId),
    'membership.removed': ({ agentId, roomId }) => subscriptions.membershipRemoved(agentId, roomId),
    // A session JWT cannot be revoked, but a live socket must not outlast the API token it came from.
    'token.revoked': ({ tokenId }) => {
      const sockets = nsp.in(tokenChannel(tokenId));
      sockets.emit('error', { code: 'AUTH_FAILED', message: 'The API token of this session was revoked' });
      sockets.disconnectSockets(true);
    },
  };

  return {
    async publish(event) {
      try {
        await (reactions[event.type] as (e: DomainEvent) => void | Promise<void>)(event);
      } catch (err) {
        logger.warn({ event: event.type, err: { message: err instanceof Error ? err.message : String(err) } }, 'realtime fan-out failed');
      }
    },
  };
}
