import { sql, type Kysely, type Selectable } from 'kysely';
import type { DB, MessagesTable } from '../../store/schema.js';
import type { Message } from '../messages/message.js';
import { withAttachments } from '../messages/attachments.store.js';
import { toMessage } from '../messages/messages.store.js';
import { countReadPendingAcks, pagePendingAcks } from '../messages/acks.store.js';

/** An inbox item: the message and whether it is for the reader's attention (core/messages/attention.ts). */
type WithAttention = Message & { attention: boolean };
// Flattened (one object type, not an intersection), as the response schema's static type is.
export type InboxMessage = { [K in keyof WithAttention]: WithAttention[K] };

export interface UnreadPage {
  messages: InboxMessage[];
  hasMore: boolean;
  /** Every unread message of the agent (the filter's, with `attention`: those for its attention). */
  total: number;
}

/**
 * The agent's unread messages across its rooms (`seq > read_seq`, not its own), oldest first by
 * createdAt then id, with their total in the same statement (a window count, taken before the
 * limit). One extra row tells whether more follow. `attentionOnly`: only those for its attention,
 * read from their `message_attention` rows (its key: agent, room, seq).
 */
export async function findUnread(
  db: Kysely<DB>, agentId: string, limit: number, rooms: readonly string[] | null = null, attentionOnly = false,
): Promise<UnreadPage> {
  if (rooms !== null && rooms.length === 0) return { messages: [], hasMore: false, total: 0 };
  let query = db
    .selectFrom('messages as m')
    .innerJoin('room_members as rm', (join) => join.onRef('rm.room_id', '=', 'm.room_id').on('rm.agent_id', '=', agentId))
    .leftJoin('message_attention as a', (join) => join.onRef('a.room_id', '=', 'm.room_id').onRef('a.seq', '=', 'm.seq').on('a.agent_id', '=', agentId))
    .selectAll('m')
    .select((eb) => eb.fn.countAll<number | string>().over().as('unread_total'))
    .select(sql<number | boolean | null>`a.agent_id is not null`.as('for_attention'))
    .whereRef('m.seq', '>', 'rm.read_seq')
    .where('m.sender_id', '<>', agentId);
  if (attentionOnly) query = query.where('a.agent_id', 'is not', null);
  // Only a token's `rooms` (docs/scopes.md), when it names them.
  if (rooms !== null) query = query.where('m.room_id', 'in', rooms);
  const rows = await query
    .orderBy('m.created_at')
    .orderBy('m.id')
    .limit(limit + 1)
    .execute();
  return {
    messages: await withAttachments(db, rows.slice(0, limit).map((row) => ({ ...toMessage(row as Selectable<MessagesTable>), attention: Boolean(row.for_attention) }))),
    hasMore: rows.length > limit,
    total: rows.length > 0 ? Number(rows[0]!.unread_total) : 0,
  };
}

/**
 * Messages awaiting the agent's acknowledgement (docs/acknowledgements.md), oldest first: all of
 * them (`filter=ack`), or only those it has read (`readOnly`: the unread ones have their attention
 * rows, which findUnread reads).
 */
export async function findAwaitingAck(db: Kysely<DB>, agentId: string, limit: number, rooms: readonly string[] | null, readOnly = false): Promise<UnreadPage> {
  const { rows, total } = await pagePendingAcks(db, agentId, limit, rooms, readOnly);
  return {
    messages: await withAttachments(db, rows.slice(0, limit).map((row) => ({ ...toMessage(row as Selectable<MessagesTable>), attention: true }))),
    hasMore: rows.length > limit,
    total,
  };
}

/**
 * The messages for the agent's attention (`filter=attention`): the unread ones for its attention,
 * and the read ones still awaiting its acknowledgement, merged in the inbox's order.
 */
export async function findAttention(db: Kysely<DB>, agentId: string, limit: number, rooms: readonly string[] | null): Promise<UnreadPage> {
  const [unread, awaiting] = [await findUnread(db, agentId, limit, rooms, true), await findAwaitingAck(db, agentId, limit, rooms, true)];
  if (awaiting.total === 0) return unread;
  const merged = [...unread.messages, ...awaiting.messages].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { messages: merged.slice(0, limit), hasMore: merged.length > limit || unread.hasMore || awaiting.hasMore, total: unread.total + awaiting.total };
}

/**
 * How many messages are for the agent's attention, in all its rooms (or a token's `rooms`): the
 * unread ones for its attention and the read ones awaiting its acknowledgement.
 */
export async function countAttention(db: Kysely<DB>, agentId: string, rooms: readonly string[] | null = null): Promise<number> {
  return (await countUnreadAttention(db, agentId, rooms)) + (await countReadPendingAcks(db, agentId, rooms));
}

/** How many unread messages are for the agent's attention, in all its rooms (or a token's `rooms`). */
async function countUnreadAttention(db: Kysely<DB>, agentId: string, rooms: readonly string[] | null = null): Promise<number> {
  if (rooms !== null && rooms.length === 0) return 0;
  let query = db
    .selectFrom('message_attention as a')
    .innerJoin('room_members as rm', (join) => join.onRef('rm.room_id', '=', 'a.room_id').onRef('rm.agent_id', '=', 'a.agent_id'))
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('a.agent_id', '=', agentId)
    .whereRef('a.seq', '>', 'rm.read_seq');
  if (rooms !== null) query = query.where('a.room_id', 'in', rooms);
  const row = await query.executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** How many unread messages there are in all (the `unreadTotal` of an attention page). */
export async function countUnread(db: Kysely<DB>, agentId: string, rooms: readonly string[] | null = null): Promise<number> {
  if (rooms !== null && rooms.length === 0) return 0;
  let query = db
    .selectFrom('messages as m')
    .innerJoin('room_members as rm', (join) => join.onRef('rm.room_id', '=', 'm.room_id').on('rm.agent_id', '=', agentId))
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .whereRef('m.seq', '>', 'rm.read_seq')
    .where('m.sender_id', '<>', agentId);
  if (rooms !== null) query = query.where('m.room_id', 'in', rooms);
  const row = await query.executeTakeFirst();
  return Number(row?.n ?? 0);
}
