import type { RoomsService } from '../../core/rooms/rooms.service.js';
import { parseId } from '../../core/validation.js';
import type { EventSpec } from '../connection/register-event.js';
import type { Subscriptions } from '../presence/room-subscriptions.js';

/** `room:join`, `room:leave`, `room:list` (SPEC.md "Client to server"). */
export function roomHandlers(deps: { rooms: RoomsService; subscriptions: Subscriptions }): Record<'room:join' | 'room:leave' | 'room:list', EventSpec> {
  const { rooms, subscriptions } = deps;
  return {
    'room:join': {
      async handle({ socket, principal, payload }) {
        const roomId = parseId(payload.roomId, 'roomId');
        await rooms.assertMember(roomId, principal.agentId); // ROOM_NOT_FOUND, FORBIDDEN
        await subscriptions.join(socket, roomId);
      },
    },

    'room:leave': {
      // Leaving is always allowed (SPEC.md shows no error): a room the socket is not in is a no-op.
      async handle({ socket, payload }) {
        await subscriptions.leave(socket, parseId(payload.roomId, 'roomId'));
      },
    },

    'room:list': {
      payloadOptional: true,
      requiresAck: true,
      async handle({ principal }) {
        const list = await rooms.listForAgent(principal.agentId);
        return { rooms: list.map(({ id, slug, name }) => ({ id, slug, name })) };
      },
    },
  };
}
