import type { Logger } from 'pino';
import type { DomainEvent, EventPublisher } from '../core/events.js';
import { agentChannel, roomChannel, tokenChannel, toWsMessage } from './protocol.js';
import type { AgentsNamespace, Subscriptions } from './subscriptions.js';

type Reactions = { [K in DomainEvent['type']]: (event: Extract<DomainEvent, { type: K }>) => void | Promise<void> };

/**
 * The realtime side of the fan-out port: what live sockets see of each domain event, published
 * after commit by whichever transport caused it (a REST-sent message reaches sockets like a
 * WebSocket-sent one). It never fails the caller: the change is committed, and a broadcast problem
 * is logged.
 */
export interface RealtimePublisherOptions {
  /** Tells the other nodes (if any) that a token's sessions ended; resolves once they know, or gave up. */
  relayRevocation?(tokenId: string): Promise<void>;
}

export function createRealtimePublisher(nsp: AgentsNamespace, subscriptions: Subscriptions, logger: Logger, options: RealtimePublisherOptions = {}): EventPublisher {
  const reactions: Reactions = {
    'message.created': ({ message }) => {
      nsp.to(roomChannel(message.roomId)).emit('message:new', toWsMessage(message));
    },
    'membership.added': ({ agentId, roomId }) => subscriptions.membershipAdded(agentId, roomId),
    'membership.removed': ({ agentId, roomId }) => subscriptions.membershipRemoved(agentId, roomId),
    // Strict mode only (core decides): the token's sessions end, so do their live sockets, on every
    // node (room operations go through the adapter). In open mode (SPEC.md Phase 1) they stay up.
    'token.revoked': async ({ tokenId, sessionsEnded }) => {
      if (!sessionsEnded) return;
      const sockets = nsp.in(tokenChannel(tokenId));
      sockets.emit('error', { code: 'AUTH_FAILED', message: 'The API token of this session was revoked' });
      sockets.disconnectSockets(true);
      await options.relayRevocation?.(tokenId);
    },
    // The agent's sessions end on every node (room operations go through the adapter).
    'agent.disabled': ({ agentId }) => {
      const sockets = nsp.in(agentChannel(agentId));
      sockets.emit('error', { code: 'AUTH_FAILED', message: 'This agent is disabled' });
      sockets.disconnectSockets(true);
    },
    'agent.enabled': () => undefined,
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
