import type { Kysely, Selectable } from 'kysely';
import type { DB, MessagesTable } from '../../store/schema.js';
import type { Message } from '../messages/message.js';
import { toMessage } from '../messages/messages.store.js';

/**
 * The agent's unread messages across its rooms (`seq > read_seq`, not its own), oldest first by
 * createdAt then id, with their total in the same statement (a window count, taken before the
 * limit). One extra row tells whether more follow.
 */
export async function findUnread(
  db: Kysely<DB>, agentId: string, limit: number, rooms: readonly string[] | null = null,
): Promise<{ messages: Message[]; hasMore: boolean; unreadTotal: number }> {
  if (rooms !== null && rooms.length === 0) return { messages: [], hasMore: false, unreadTotal: 0 };
  let query = db
    .selectFrom('messages as m')
    .innerJoin('room_members as rm', (join) => join.onRef('rm.room_id', '=', 'm.room_id').on('rm.agent_id', '=', agentId))
    .selectAll('m')
    .select((eb) => eb.fn.countAll<number | string>().over().as('unread_total'))
    .whereRef('m.seq', '>', 'rm.read_seq')
    .where('m.sender_id', '<>', agentId);
  // Only a token's `rooms` (docs/scopes.md), when it names them.
  if (rooms !== null) query = query.where('m.room_id', 'in', rooms);
  const rows = await query
    .orderBy('m.created_at')
    .orderBy('m.id')
    .limit(limit + 1)
    .execute();
  return {
    messages: rows.slice(0, limit).map((row) => toMessage(row as Selectable<MessagesTable>)),
    hasMore: rows.length > limit,
    unreadTotal: rows.length > 0 ? Number(rows[0]!.unread_total) : 0,
  };
}
