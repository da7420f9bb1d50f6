import type { ReadCursorsService } from '../../core/rooms/read-cursors.service.js';
import type { RoomsService } from '../../core/rooms/rooms.service.js';
import type { EventSpec } from '../connection/register-event.js';
import type { Subscriptions } from '../presence/room-subscriptions.js';

/** `room:join`, `room:leave`, `room:list`, `room:read` and `dm:open` (docs/protocol.md, Client to server). */
export function roomHandlers(deps: { rooms: RoomsService; readCursors: ReadCursorsService; subscriptions: Subscriptions }): Record<'room:join' | 'room:leave' | 'room:list' | 'room:read' | 'dm:open', EventSpec> {
  const { rooms, readCursors, subscriptions } = deps;
  return {
    'room:join': {
      async handle({ socket, principal, payload }) {
        // ROOM_NOT_FOUND, FORBIDDEN; a token without messages:read is not subscribed (it would receive message:new).
        const roomId = await rooms.authorizeJoin(principal, payload.roomId);
        socket.data.leftRooms?.delete(roomId ?? '');
        if (roomId !== null) await subscriptions.join(socket, roomId);
      },
    },

    'room:leave': {
      // Leaving is always allowed (the protocol gives it no error): a room the socket is not in is a no-op.
      async handle({ socket, principal, payload }) {
        const roomId = rooms.authorizeLeave(principal, payload.roomId);
        // The client's choice: the position check must not subscribe the socket again (position-check.ts).
        (socket.data.leftRooms ??= new Set()).add(roomId);
        await subscriptions.leave(socket, roomId);
      },
    },

    'room:list': {
      payloadOptional: true,
      requiresAck: true,
      async handle({ principal }) {
        const list = await readCursors.listForAgent(principal);
        return { rooms: list.map(({ id, slug, name, kind, lastSeq, readSeq, unreadCount, attentionCount }) => ({ id, slug, name, kind, lastSeq, readSeq, unreadCount, attentionCount })) };
      },
    },

    'room:read': {
      // Acknowledged with {roomId, readSeq, unreadCount}, as REST answers POST /api/v1/rooms/:id/read.
      async handle({ principal, payload }) {
        return readCursors.markRead(principal, payload.roomId, { seq: payload.seq });
      },
    },

    'dm:open': {
      // The REST route's service call; the room:added it publishes subscribes this socket too.
      async handle({ principal, payload }) {
        const { agentId } = payload;
        const { room } = await rooms.openDirect(principal, { agentId });
        return { room };
      },
    },
  };
}
