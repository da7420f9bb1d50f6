import type { Kysely } from 'kysely';
import { forbidden, roomNotFound, validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { requireRoom, type Authz } from '../authz/authz.js';
import type { Principal } from '../principal.js';
import { parseId, parseSeq, requireObject } from '../validation.js';
import { advanceReadCursor, findReadStates, type ReadState } from './read-cursors.store.js';
import type { RoomsService } from './rooms.service.js';
import { findLastSeq, type Room } from './rooms.store.js';

export type { ReadState } from './read-cursors.store.js';

/** What marking read answers: the cursor and the room's unread count. */
export type ReadCursor = Omit<ReadState, 'attentionCount'>;

/** A room in a listing; a caller's member rooms carry its read state (docs/catch-up.md). */
export type RoomListing = Room & { readSeq?: number; unreadCount?: number; attentionCount?: number };

/**
 * Read cursors: each membership's `readSeq`, moved forward by the member (`POST .../read`,
 * `room:read`), and the unread counts room listings show. Sending does not move the sender's
 * cursor, and the sender's own messages are never unread.
 */
export interface ReadCursorsService {
  /** Member of the room in both modes; `input` is `{seq}`. */
  markRead(principal: Principal | null, roomId: unknown, input: unknown): Promise<ReadCursor>;
  /** `GET /api/v1/rooms`: the rooms RoomsService.list gives, with read state for a JWT caller's member rooms. */
  list(principal: Principal | null): Promise<RoomListing[]>;
  /** `room:list`: the agent's rooms its token reaches, each with its read state. */
  listForAgent(principal: Principal): Promise<RoomListing[]>;
}

export function createReadCursorsService(deps: { db: Kysely<DB>; authz: Authz; rooms: RoomsService }): ReadCursorsService {
  const { db, authz, rooms } = deps;

  const withReadStates = async (agentId: string, list: Room[]): Promise<RoomListing[]> => {
    if (list.length === 0) return list;
    const states = new Map((await findReadStates(db, agentId)).map((s) => [s.roomId, s]));
    return list.map((room) => {
      const state = states.get(room.id);
      return state === undefined ? room : { ...room, readSeq: state.readSeq, unreadCount: state.unreadCount, attentionCount: state.attentionCount };
    });
  };

  return {
    async markRead(principal, rawRoomId, input) {
      const reader = authz.requireAgent(principal, 'messages:read');
      const roomId = parseId(rawRoomId, 'roomId');
      const { seq: rawSeq } = requireObject(input);
      if (rawSeq === undefined) throw validationError({ seq: 'is required' });
      // A JSON number only: "5" in a JSON body is a mistake worth pointing out.
      const seq = typeof rawSeq === 'number' ? parseSeq(rawSeq, 'seq') : parseSeq(undefined, 'seq');
      await rooms.assertMember(roomId, reader.agentId); // ROOM_NOT_FOUND, FORBIDDEN (both modes)
      requireRoom(reader, roomId);
      const lastSeq = await findLastSeq(db, roomId);
      if (lastSeq === null) throw roomNotFound();
      if (seq > lastSeq) throw validationError({ seq: `must not be above the room's lastSeq (${lastSeq})` });
      await advanceReadCursor(db, roomId, reader.agentId, seq);
      const [state] = await findReadStates(db, reader.agentId, roomId);
      // The membership was removed in between.
      if (state === undefined) throw forbidden('Not a member of this room');
      return { roomId: state.roomId, readSeq: state.readSeq, unreadCount: state.unreadCount };
    },

    async list(principal) {
      const list = await rooms.list(principal);
      return principal === null ? list : withReadStates(principal.agentId, list);
    },

    async listForAgent(principal) {
      authz.requireAgent(principal, 'rooms:read');
      return withReadStates(principal.agentId, await rooms.listForAgent(principal));
    },
  };
}
