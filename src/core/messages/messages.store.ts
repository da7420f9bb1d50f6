import type { Kysely, Selectable, Transaction } from 'kysely';
import { prepared } from '../../store/prepared.js';
import type { DB, MessagesTable } from '../../store/schema.js';
import { fromJson, toIso } from '../../store/values.js';
import type { Message } from './messages.service.js';

type Db = Kysely<DB> | Transaction<DB>;

export function toMessage(row: Selectable<MessagesTable>): Message {
  const message: Message = {
    id: row.id,
    roomId: row.room_id,
    senderId: row.sender_id,
    body: row.body,
    createdAt: toIso(row.created_at),
    seq: Number(row.seq),
  };
  const mentions = row.mentions === null ? null : fromJson(row.mentions);
  if (Array.isArray(mentions)) message.mentions = mentions as string[];
  if (row.reply_to !== null) message.replyTo = row.reply_to;
  if (row.client_msg_id !== null) message.clientMsgId = row.client_msg_id;
  return message;
}

// Compiled once: the statements of every send and every history page.
const insertMessageQuery = prepared(9, (db, id: string, roomId: string, senderId: string, body: string, mentions: string | null, replyTo: string | null, clientMsgId: string | null, createdAt: string, seq: number) =>
  db.insertInto('messages').values({
    id,
    room_id: roomId,
    sender_id: senderId,
    body,
    mentions,
    reply_to: replyTo,
    client_msg_id: clientMsgId,
    created_at: createdAt,
    seq,
  }),
);
const latestPageQuery = prepared(2, (db, roomId: string, rows: number) =>
  db.selectFrom('messages').selectAll().where('room_id', '=', roomId).orderBy('id', 'desc').limit(rows),
);
const olderPageQuery = prepared(3, (db, roomId: string, before: string, rows: number) =>
  db.selectFrom('messages').selectAll().where('room_id', '=', roomId).where('id', '<', before).orderBy('id', 'desc').limit(rows),
);

export async function insertMessage(db: Db, m: Message): Promise<void> {
  await insertMessageQuery(db, m.id, m.roomId, m.senderId, m.body, m.mentions ? JSON.stringify(m.mentions) : null, m.replyTo ?? null, m.clientMsgId ?? null, m.createdAt, m.seq);
}

export async function findMessageInRoom(db: Db, roomId: string, id: string): Promise<Message | null> {
  const row = await db.selectFrom('messages').selectAll().where('room_id', '=', roomId).where('id', '=', id).executeTakeFirst();
  return row ? toMessage(row) : null;
}

export async function findByClientMsgId(db: Db, roomId: string, senderId: string, clientMsgId: string): Promise<Message | null> {
  const row = await db
    .selectFrom('messages')
    .selectAll()
    .where('room_id', '=', roomId)
    .where('sender_id', '=', senderId)
    .where('client_msg_id', '=', clientMsgId)
    .executeTakeFirst();
  return row ? toMessage(row) : null;
}

/** Newest first; `before` exclusive. Fetches one extra row to tell whether older messages exist. */
export async function pageMessages(db: Db, roomId: string, before: string | null, limit: number): Promise<{ messages: Message[]; hasMore: boolean }> {
  const result = before === null ? await latestPageQuery(db, roomId, limit + 1) : await olderPageQuery(db, roomId, before, limit + 1);
  const rows = result.rows as Selectable<MessagesTable>[];
  const hasMore = rows.length > limit;
  return { messages: rows.slice(0, limit).map(toMessage), hasMore };
}
