import type { Kysely } from 'kysely';
import { conflict, forbidden, notFound } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { requireRoom, type Authz } from '../authz/authz.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { parseId } from '../validation.js';
import { findAck, listAcks, markAcked } from './acks.store.js';
import { isDirectRoom } from './attention.js';
import type { Message } from './message.js';
import type { OutboxWrites } from './messages.service.js';
import { findMessageInRoom } from './messages.store.js';

export interface AckList {
  /** Oldest first. */
  acked: { agentId: string; at: string }[];
  pending: string[];
}

/**
 * Acknowledgements (docs/acknowledgements.md): a send with `ackRequired` names who must acknowledge
 * (messages.service.ts writes them with the message); here they do, and its sender sees who did.
 */
export interface AcksService {
  /** The caller acknowledges the message: when it did (the same on a repeat, which announces nothing). */
  ack(principal: Principal | null, roomId: unknown, messageId: unknown): Promise<{ ackedAt: string }>;
  /** Its sender (or an admin) reads who acknowledged it and who has not. */
  list(principal: Principal | null, roomId: unknown, messageId: unknown): Promise<AckList>;
}

/** The webhook outbox's part of an acknowledgement: `message.acked` to the sender's endpoints, written in its transaction. */
export interface AckOutbox {
  prepareAcked(message: Message, agentId: string, at: string): Promise<OutboxWrites | null>;
}

export function createAcksService(deps: { db: Kysely<DB>; authz: Authz; rooms: RoomsService; events: EventPublisher; outbox?: AckOutbox }): AcksService {
  const { db, authz, rooms, events, outbox } = deps;

  /** A message of the room, not deleted: 404 otherwise. */
  const messageOf = async (roomId: string, messageId: string): Promise<Message> => {
    const message = await findMessageInRoom(db, roomId, messageId);
    if (!message || message.deletedAt !== null) throw notFound('Message');
    return message;
  };

  return {
    async ack(principal, rawRoomId, rawMessageId) {
      const agent = authz.requireAgent(principal, 'messages:read');
      const roomId = parseId(rawRoomId, 'roomId');
      const messageId = parseId(rawMessageId, 'messageId');
      // Only members acknowledge: anyone else is refused as a non-member reading the room is (404 for a direct room).
      await rooms.assertMember(roomId, agent.agentId);
      requireRoom(agent, roomId);
      const message = await messageOf(roomId, messageId);
      if (message.ack === null) throw conflict('This message asks for no acknowledgement');
      const at = nowIso();
      const outboxWrites = outbox ? await outbox.prepareAcked(message, agent.agentId, at) : null;
      const { first, row } = await db.transaction().execute(async (trx) => {
        const first = await markAcked(trx, message, agent.agentId, at);
        if (first) for (const statement of outboxWrites?.statements ?? []) await trx.executeQuery(statement);
        return { first, row: await findAck(trx, messageId, agent.agentId) };
      });
      if (row === undefined || row.ackedAt === null) throw conflict('This message does not ask you for an acknowledgement');
      if (first) {
        outboxWrites?.committed();
        await events.publish({ type: 'message.acked', roomId, messageId, senderId: message.senderId, agentId: agent.agentId, at: row.ackedAt });
      }
      return { ackedAt: row.ackedAt };
    },

    async list(principal, rawRoomId, rawMessageId) {
      const caller = authz.requireAgent(principal, 'messages:read');
      const roomId = parseId(rawRoomId, 'roomId');
      const messageId = parseId(rawMessageId, 'messageId');
      // A direct room is an unknown room to anyone but its two members, admins included.
      if (isDirectRoom(await rooms.get(roomId))) await rooms.assertMember(roomId, caller.agentId);
      requireRoom(caller, roomId);
      const message = await messageOf(roomId, messageId);
      if (message.senderId !== caller.agentId && caller.role !== 'admin') throw forbidden('Only its sender, or an admin, may list who acknowledged a message');
      return listAcks(db, messageId);
    },
  };
}
