import { sql } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import type { Db } from '../../store/schema.js';
import { toIso } from '../../store/values.js';
import { deleteFilesAttachedToNothing } from '../files/files.store.js';
import { removeSearchEntry } from '../messages/search-entries.store.js';
import { searchText } from '../search-text.js';

/**
 * The retention sweep's queries (docs/retention.md). A room's messages go oldest first, in `seq`
 * order, a batch per transaction: a sweep stopped anywhere leaves whole messages, each with all of
 * its rows or none of them.
 */

/** A room the sweep looks at: one not under legal hold whose retention (its own or the default) is set. */
export interface SweptRoom {
  id: string;
  /** Null: the service's default. */
  retentionDays: number | null;
}

/** The rooms not under legal hold: with their own retention, and (when the service has one) all others. */
export async function roomsToSweep(db: Db, serviceDefault: boolean): Promise<SweptRoom[]> {
  let query = db.selectFrom('rooms').select(['id', 'retention_days']).where('legal_hold', '=', 0);
  if (!serviceDefault) query = query.where('retention_days', 'is not', null);
  const rows = await query.orderBy('id').execute();
  return rows.map((r) => ({ id: r.id, retentionDays: r.retention_days === null ? null : Number(r.retention_days) }));
}

/** A room's oldest stored messages after `afterSeq`, at most `limit`, in `seq` order. */
export async function oldestMessages(db: Db, roomId: string, afterSeq: number, limit: number): Promise<{ id: string; seq: number; body: string; createdAt: string }[]> {
  const rows = await db.selectFrom('messages').select(['id', 'seq', 'body', 'created_at'])
    .where('room_id', '=', roomId).where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
  return rows.map((r) => ({ id: r.id, seq: Number(r.seq), body: r.body, createdAt: toIso(r.created_at) }));
}

/**
 * The tables whose rows hang on a message by its `message_id` and go with it (besides its search
 * entry, attention and attachments, which need more than a delete by id). A table added later that
 * keys rows by message (acknowledgements, for one) is added here, or declared `on delete cascade`.
 */
const MESSAGE_DEPENDENT_TABLES = ['webhook_deliveries', 'message_acks'] as const;

/**
 * Deletes, in one transaction, the given messages of a room for good (`messages` sorted by `seq`, a
 * prefix of the room's stored messages): their search entries, attention, attachments, the rows of
 * MESSAGE_DEPENDENT_TABLES, then the messages, then the files they alone carried (their bytes back
 * to their uploaders' quota). Nothing is deleted when the room went under legal hold meanwhile
 * (false). Replies keep their `threadId`, `replyTo` as ids: a thread link may name a deleted message.
 */
export async function deleteMessages(trx: Db, roomId: string, messages: readonly { id: string; seq: number; body: string }[]): Promise<boolean> {
  if (messages.length === 0) return true;
  const room = await trx.selectFrom('rooms').select('legal_hold').where('id', '=', roomId).executeTakeFirst();
  if (room === undefined || Number(room.legal_hold) === 1) return false;
  const ids = messages.map((m) => m.id);
  const idList = dialectOf(trx).idList(ids);
  const inIds = (column: string) => dialectOf(trx).inIdList(column, idList);
  for (const message of messages) await removeSearchEntry(trx, message.id, searchText(message.body));
  await trx.deleteFrom('message_attention').where('room_id', '=', roomId)
    .where('seq', '>=', messages[0]!.seq).where('seq', '<=', messages[messages.length - 1]!.seq).where(inIds('message_id')).execute();
  const files = await trx.selectFrom('message_attachments').select('file_id').where(inIds('message_id')).execute();
  await trx.deleteFrom('message_attachments').where(inIds('message_id')).execute();
  for (const table of MESSAGE_DEPENDENT_TABLES) await sql`delete from ${sql.table(table)} where ${inIds('message_id')}`.execute(trx);
  await trx.deleteFrom('messages').where('room_id', '=', roomId).where(inIds('id')).execute();
  await deleteFilesAttachedToNothing(trx, [...new Set(files.map((f) => f.file_id))]);
  return true;
}

const SWEEP_CLAIM_KEY = 'retention_sweep_due';

/**
 * Claims the next sweep for this node: true for exactly one of the nodes that ask once it is due
 * (a conditional update of one row), which moves it `intervalMs` on. ISO times of one format compare
 * as text.
 */
export async function claimSweep(db: Db, now: number, intervalMs: number): Promise<boolean> {
  await db.insertInto('service_settings').values({ key: SWEEP_CLAIM_KEY, value: new Date(0).toISOString() })
    .onConflict((oc) => oc.column('key').doNothing()).execute();
  const claimed = await db.updateTable('service_settings').set({ value: new Date(now + intervalMs).toISOString() })
    .where('key', '=', SWEEP_CLAIM_KEY).where('value', '<=', new Date(now).toISOString()).executeTakeFirst();
  return Number(claimed.numUpdatedRows) > 0;
}
