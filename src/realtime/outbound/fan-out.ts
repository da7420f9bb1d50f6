import type { Logger } from 'pino';
import type { DomainEvent, EventPublisher } from '../../core/events.js';
import { unauthenticated } from '../../errors.js';
import { toWsError } from '../connection/ws-errors.js';
import type { PresenceAnnouncer, Subscriptions } from '../presence/room-subscriptions.js';
import { agentChannel, noTasksChannel, roomChannel, roomGrantChannel, scopedAgentChannel, scopedTasksChannel, scopedTasksRoomChannel, tokenChannel, toWsMessage, type AgentsNamespace } from '../protocol.js';

type Reactions = { [K in DomainEvent['type']]: (event: Extract<DomainEvent, { type: K }>) => void | Promise<void> };

/**
 * The realtime side of the fan-out port: what live sockets see of each domain event, published
 * after commit by whichever transport caused it (a REST-sent message reaches sockets like a
 * WebSocket-sent one). It never fails the caller: the change is committed, and a broadcast problem
 * is logged. A room's events go out after the `presence:update`s waiting for the room
 * (room-subscriptions.ts): `toRoom` flushes them first.
 */
export function createRealtimePublisher(nsp: AgentsNamespace, subscriptions: Subscriptions, presence: Pick<PresenceAnnouncer, 'flush'>, logger: Logger): EventPublisher {
  const toRoom = (roomId: string) => {
    presence.flush(roomId);
    return nsp.to(roomChannel(roomId));
  };
  const reactions: Reactions = {
    'message.created': ({ message }) => {
      toRoom(message.roomId).emit('message:new', toWsMessage(message));
    },
    // To the room's sockets on every node, as message:new goes (the adapter carries room broadcasts).
    'message.updated': ({ message }) => {
      const { id, roomId, seq, body, data, attachments, editedAt, streaming, streamEnd } = message;
      // A streamed message's end says how it ended (docs/streaming.md); an edit keeps its payload.
      const ended = streamEnd === null ? {} : { streaming, streamEnd };
      toRoom(roomId).emit('message:updated', { id, roomId, seq, body, editedAt, data, attachments, ...ended });
    },
    // The other members' sockets on every node (the sender's own are left out: it wrote the text).
    'message.delta': ({ roomId, messageId, senderId, seq, offset, text }) => {
      toRoom(roomId).except([agentChannel(senderId), scopedAgentChannel(senderId)]).emit('message:delta', { roomId, messageId, seq, offset, text });
    },
    'message.deleted': ({ message }) => {
      toRoom(message.roomId).emit('message:deleted', { id: message.id, roomId: message.roomId, seq: message.seq, deletedAt: message.deletedAt! });
    },
    // The sockets moved already, on every node, through the event bridge (cluster/event-bridge.ts).
    'membership.added': async ({ agentIds, roomId }) => {
      for (const agentId of agentIds) await subscriptions.membershipAdded(agentId, roomId);
    },
    'membership.removed': async ({ agentIds, roomId }) => {
      for (const agentId of agentIds) await subscriptions.membershipRemoved(agentId, roomId);
    },
    // Strict mode only (core decides): the token's sessions end, so do their live sockets, on every
    // node (room operations go through the adapter). In open mode JWTs are irrevocable (docs/protocol.md), so they stay up.
    // Every node's session caches learned it already through the event bridge.
    'token.revoked': ({ tokenId, sessionsEnded }) => {
      if (!sessionsEnded) return;
      const sockets = nsp.in(tokenChannel(tokenId));
      sockets.emit('error', toWsError(unauthenticated('The API token of this session was revoked'), logger, 'token.revoked'));
      sockets.disconnectSockets(true);
    },
    // The agent's sessions end on every node (room operations go through the adapter).
    'agent.disabled': ({ agentId }) => {
      const sockets = nsp.in([agentChannel(agentId), scopedAgentChannel(agentId)]);
      sockets.emit('error', toWsError(unauthenticated('This agent is disabled'), logger, 'agent.disabled'));
      sockets.disconnectSockets(true);
    },
    'agent.enabled': () => undefined,
    'webhook.created': () => undefined,
    // The room's channel reaches every node's sockets through the adapter (docs/protocol.md, Activity).
    'activity.changed': ({ update }) => {
      toRoom(update.roomId).emit('activity:update', update);
    },
    // The sockets of the two agents whose token reads tasks in the task's room, on every node (the
    // adapter carries the agents' channels; protocol.ts, scopedTasksChannel); a queued task's also
    // to its queue room's sockets, every member's (one emit: a socket in several channels gets it once).
    'task.updated': ({ task }) => {
      const agents = task.assigneeId === null ? [task.requesterId] : [task.requesterId, task.assigneeId];
      const channels = agents.flatMap((agentId) => [agentChannel(agentId), scopedTasksChannel(agentId), scopedTasksRoomChannel(agentId, task.roomId)]);
      if (task.queueId !== null) {
        presence.flush(task.queueId);
        channels.push(roomChannel(task.queueId));
      }
      nsp.to(channels).except(agents.map(noTasksChannel)).emit('task:updated', { task });
    },
    // Only the sender's sockets whose token reads the room (on every node: the adapter carries the agent's channels).
    'message.acked': ({ roomId, messageId, senderId, agentId, at }) => {
      nsp.to([agentChannel(senderId), roomGrantChannel(senderId, roomId)]).emit('message:acked', { roomId, messageId, agentId, at });
    },
    // To the room's sockets on every node (the adapter carries room broadcasts), and to the holder's
    // when an admin released its lease (one emit: a socket in both channels gets it once).
    'lease.updated': ({ lease, state, alsoTo }) => {
      presence.flush(lease.roomId);
      const holder = alsoTo === undefined ? [] : [agentChannel(alsoTo), scopedAgentChannel(alsoTo)];
      nsp.to([roomChannel(lease.roomId), ...holder]).emit('lease:updated', { lease, state });
    },
  };

  const failed = (event: DomainEvent, err: unknown): void => {
    logger.warn({ event: event.type, err: { message: err instanceof Error ? err.message : String(err) } }, 'realtime fan-out failed');
  };
  return {
    publish(event) {
      try {
        const pending = (reactions[event.type] as (e: DomainEvent) => void | Promise<void>)(event);
        if (pending !== undefined) return pending.catch((err: unknown) => failed(event, err));
      } catch (err) {
        failed(event, err);
      }
    },
  };
}
