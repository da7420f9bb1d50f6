import { sql, type CompiledQuery, type Insertable, type Selectable, type Transaction } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { prepared } from '../../store/prepared.js';
import type { DB, Db, MessagesTable } from '../../store/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../store/values.js';
import { auditRowsInsertOnPostgres, type AuditRow } from '../audit/audit.store.js';
import { withAttachments } from './attachments.store.js';
import type { MessageTask } from './message.js';
import type { Message } from './message.js';

export function toMessage(row: Selectable<MessagesTable>): Message {
  const message: Message = {
    id: row.id,
    roomId: row.room_id,
    senderId: row.sender_id,
    body: row.body,
    createdAt: toIso(row.created_at),
    seq: Number(row.seq),
    threadId: row.thread_id,
    editedAt: toIsoOrNull(row.edited_at),
    deletedAt: toIsoOrNull(row.deleted_at),
    data: row.data === null ? null : (fromJson(row.data) as Record<string, unknown>),
    // Set by withAttachments (attachments.store.ts), one query per page.
    attachments: [],
    task: row.task === null || row.task === undefined ? null : (fromJson(row.task) as MessageTask),
  };
  if (row.thread_id === null) {
    message.replyCount = Number(row.reply_count);
    message.lastReplyAt = toIsoOrNull(row.last_reply_at);
  }
  const mentions = row.mentions === null ? null : fromJson(row.mentions);
  if (Array.isArray(mentions)) message.mentions = mentions as string[];
  if (row.reply_to !== null) message.replyTo = row.reply_to;
  if (row.client_msg_id !== null) message.clientMsgId = row.client_msg_id;
  return message;
}

// Compiled once: the statements of every send and every history page. `seq` is the room's counter,
// bumped earlier in the same transaction, less the message's place from the end (seq.store.ts).
type InsertedColumns = 'id' | 'room_id' | 'sender_id' | 'body' | 'mentions' | 'reply_to' | 'client_msg_id' | 'created_at' | 'thread_id' | 'data' | 'task';
const insertMessageQuery = prepared((db, p: Required<Pick<Insertable<MessagesTable>, InsertedColumns>> & { seq_from_end: number }) =>
  db.insertInto('messages').values((eb) => ({
    id: p.id,
    room_id: p.room_id,
    sender_id: p.sender_id,
    body: p.body,
    mentions: p.mentions,
    reply_to: p.reply_to,
    client_msg_id: p.client_msg_id,
    created_at: p.created_at,
    thread_id: p.thread_id,
    data: p.data,
    task: p.task,
    seq: eb(eb.selectFrom('rooms').select('last_seq').where('id', '=', p.room_id), '-', p.seq_from_end).$notNull(),
  })),
);
const latestPageQuery = prepared((db, p: { roomId: string; rows: number }) =>
  db.selectFrom('messages').selectAll().where('room_id', '=', p.roomId).orderBy('id', 'desc').limit(p.rows),
);
const olderPageQuery = prepared((db, p: { roomId: string; before: string; rows: number }) =>
  db.selectFrom('messages').selectAll().where('room_id', '=', p.roomId).where('id', '<', p.before).orderBy('id', 'desc').limit(p.rows),
);

/**
 * The compact JSON of a send's `data` as its check made it (checkMessageData, in the send path): the
 * insert takes it instead of serialising the object a second time.
 */
const dataJson = new WeakMap<object, string>();
export function rememberDataJson(data: object, json: string): void {
  dataJson.set(data, json);
}
const jsonOfData = (data: Record<string, unknown>): string => dataJson.get(data) ?? JSON.stringify(data);

/** For the transaction that bumps the room's counter (numberMessages): `seqFromEnd` is the message's `fromEnd`. */
export function insertMessageStatement(db: Db, m: Message, seqFromEnd: number): CompiledQuery {
  return insertMessageQuery.compile(db, { ...messageColumns(m), seq_from_end: seqFromEnd });
}

/** A message's columns but `seq`, as both inserts write them. */
function messageColumns(m: Message) {
  return {
    id: m.id,
    room_id: m.roomId,
    sender_id: m.senderId,
    body: m.body,
    mentions: m.mentions ? JSON.stringify(m.mentions) : null,
    reply_to: m.replyTo ?? null,
    client_msg_id: m.clientMsgId ?? null,
    created_at: m.createdAt,
    thread_id: m.threadId,
    data: m.data === null ? null : jsonOfData(m.data),
    task: m.task === null ? null : JSON.stringify(m.task),
  };
}

/**
 * The messages of a batch as one multi-row insert (PostgreSQL: one round trip for the batch instead
 * of one per message); `seqFromEnd[i]` is message i's, as for insertMessageStatement. Compiled per
 * batch: its shape depends on the count.
 */
export function insertMessagesStatement(db: Db, messages: readonly Message[], seqFromEnd: readonly number[]): CompiledQuery {
  return db.insertInto('messages').values(messages.map((m, i) => ({
    ...messageColumns(m),
    seq: sql<number>`(select last_seq from rooms where id = ${m.roomId}) - ${seqFromEnd[i]!}`,
  }))).compile();
}

/**
 * A whole group commit as one PostgreSQL statement (data-modifying CTEs, one round trip and, alone,
 * its own transaction): the rooms' counters bumped (the rows locked in id order first, as
 * seq.store.ts explains), the messages inserted with `seq` taken from the bumped counter each one's
 * room returns, their roots' reply counts, their search entries and audit records (audit.store.ts builds theirs); it answers the counters (RoomCounter rows).
 * Every sub-statement sees the same snapshot, hence `seq` from `returning`; the foreign keys of the
 * search entries are checked at the end of the statement, after the messages exist. Each column is
 * one array parameter, so the text is the same whatever the batch's size.
 */
export function insertBatchOnPostgres(db: Db, batch: {
  rooms: readonly string[];
  counts: readonly number[];
  messages: readonly Message[];
  fromEnd: readonly number[];
  search: readonly { messageId: string; words: string }[];
  audit: readonly AuditRow[];
  /** Who each message is for the attention of (core/messages/attention.ts), one row per pair. */
  attention: { agents: readonly string[]; rooms: readonly string[]; messageIds: readonly string[]; fromEnd: readonly number[] };
}): CompiledQuery<{ id: string; last_seq: number }> {
  const { messages: ms, search, audit, attention: at } = batch;
  const col = <T>(f: (m: Message) => T): T[] => ms.map(f);
  // Replies bump their roots' counts; joined to `bumped` so that the rooms' rows are locked first.
  const replies = ms.filter((m) => m.threadId !== null);
  return sql<{ id: string; last_seq: number }>`with bumped as (
      update rooms set last_seq = rooms.last_seq + c.n
      from (select id from rooms where id = any(${batch.rooms}::uuid[]) order by id for update) as locked
      join unnest(${batch.rooms}::uuid[], ${batch.counts}::int[]) as c (id, n) on c.id = locked.id
      where rooms.id = c.id
      returning rooms.id, rooms.last_seq
    ), inserted as (
      insert into messages (id, room_id, sender_id, body, mentions, reply_to, client_msg_id, created_at, thread_id, data, task, seq)
      select m.id, m.room_id, m.sender_id, m.body, m.mentions::jsonb, m.reply_to, m.client_msg_id, m.created_at, m.thread_id, m.data::jsonb, m.task::jsonb, bumped.last_seq - m.from_end
      from unnest(${col((m) => m.id)}::uuid[], ${col((m) => m.roomId)}::uuid[], ${col((m) => m.senderId)}::uuid[], ${col((m) => m.body)}::text[],
        ${col((m) => (m.mentions ? JSON.stringify(m.mentions) : null))}::text[], ${col((m) => m.replyTo ?? null)}::uuid[],
        ${col((m) => m.clientMsgId ?? null)}::text[], ${col((m) => m.createdAt)}::timestamptz[], ${col((m) => m.threadId)}::uuid[],
        ${col((m) => (m.data === null ? null : jsonOfData(m.data)))}::text[], ${col((m) => (m.task === null ? null : JSON.stringify(m.task)))}::text[], ${batch.fromEnd}::int[])
        as m (id, room_id, sender_id, body, mentions, reply_to, client_msg_id, created_at, thread_id, data, task, from_end)
      join bumped on bumped.id = m.room_id
    ), threaded as (
      update messages set reply_count = messages.reply_count + t.n, last_reply_at = greatest(messages.last_reply_at, t.at)
      from (
        select r.thread_id, count(*)::int as n, max(r.at) as at
        from unnest(${replies.map((m) => m.threadId)}::uuid[], ${replies.map((m) => m.roomId)}::uuid[], ${replies.map((m) => m.createdAt)}::timestamptz[])
          as r (thread_id, room_id, at)
        join bumped on bumped.id = r.room_id
        group by r.thread_id
      ) as t
      where messages.id = t.thread_id
    ), searched as (
      insert into message_search (message_id, words)
      select * from unnest(${search.map((e) => e.messageId)}::uuid[], ${search.map((e) => e.words)}::text[])
    ), attended as (
      insert into message_attention (agent_id, room_id, seq, message_id)
      select a.agent_id, a.room_id, bumped.last_seq - a.from_end, a.message_id
      from unnest(${at.agents}::uuid[], ${at.rooms}::uuid[], ${at.messageIds}::uuid[], ${at.fromEnd}::int[]) as a (agent_id, room_id, message_id, from_end)
      join bumped on bumped.id = a.room_id
    ), audited as (
      ${auditRowsInsertOnPostgres(audit)}
    )
    select id, last_seq from bumped`.compile(db);
}

const bumpReplyCountQuery = prepared((db, p: { threadId: string; at: string }) =>
  db.updateTable('messages').set((eb) => ({ reply_count: eb('reply_count', '+', 1), last_reply_at: p.at })).where('id', '=', p.threadId),
);

/**
 * The reply counts of the batch's roots (`replyCount`, `lastReplyAt`), in the send's transaction:
 * one compiled-once update per reply (SQLite), or one statement for the batch (PostgreSQL). A batch's
 * messages are in send order, so the last reply of a root sets its `last_reply_at`.
 */
export function replyCountStatements(db: Db, messages: readonly Message[], postgres: boolean): CompiledQuery[] {
  const replies = messages.filter((m) => m.threadId !== null);
  if (replies.length === 0) return [];
  if (!postgres) return replies.map((m) => bumpReplyCountQuery.compile(db, { threadId: m.threadId!, at: m.createdAt }));
  return [sql`update messages set reply_count = messages.reply_count + t.n, last_reply_at = greatest(messages.last_reply_at, t.at)
    from (
      select r.thread_id, count(*)::int as n, max(r.at) as at
      from unnest(${replies.map((m) => m.threadId)}::uuid[], ${replies.map((m) => m.createdAt)}::timestamptz[]) as r (thread_id, at)
      group by r.thread_id
    ) as t
    where messages.id = t.thread_id`.compile(db)];
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
  const { rows } = before === null ? await latestPageQuery(db, { roomId, rows: limit + 1 }) : await olderPageQuery(db, { roomId, before, rows: limit + 1 });
  const hasMore = rows.length > limit;
  return { messages: await withAttachments(db, rows.slice(0, limit).map(toMessage)), hasMore };
}


const threadRepliesQuery = prepared((db, p: { threadId: string; afterSeq: number; rows: number }) =>
  db.selectFrom('messages').selectAll().where('thread_id', '=', p.threadId).where('seq', '>', p.afterSeq).orderBy('seq').limit(p.rows),
);

/** A thread's replies with `seq > afterSeq`, oldest first (the partial index of migration 010); one extra row tells whether more follow. */
export async function pageThreadReplies(db: Db, threadId: string, afterSeq: number, limit: number): Promise<{ replies: Message[]; hasMore: boolean }> {
  const { rows } = await threadRepliesQuery(db, { threadId, afterSeq, rows: limit + 1 });
  return { replies: rows.slice(0, limit).map(toMessage), hasMore: rows.length > limit };
}

/** An edit: the new body, if the message is still not deleted (false: it was, meanwhile). */
export async function updateMessageBody(db: Db, id: string, body: string, editedAt: string): Promise<boolean> {
  const result = await db.updateTable('messages').set({ body, edited_at: editedAt }).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Inside an edit's or a deletion's transaction: the message's body as it is now, held until the
 * transaction ends (a key lock on PostgreSQL; SQLite's one writer runs transactions one at a time),
 * so that the search entry removed is the one the body had, whatever edit committed in between.
 * Null: unknown or deleted.
 */
export async function lockCurrentBody(trx: Transaction<DB>, id: string): Promise<string | null> {
  await dialectOf(trx).lockKey(trx, `message:${id}`);
  const row = await trx.selectFrom('messages').select(['body', 'deleted_at']).where('id', '=', id).executeTakeFirst();
  return row === undefined || row.deleted_at !== null ? null : row.body;
}

/** A deletion: the tombstone (body "", mentions [], data null), if not deleted already (false: it was, meanwhile). */
export async function tombstoneMessage(db: Db, id: string, deletedAt: string): Promise<boolean> {
  const result = await db.updateTable('messages').set({ body: '', mentions: '[]', data: null, deleted_at: deletedAt }).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
