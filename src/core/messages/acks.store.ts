import type { CompiledQuery } from 'kysely';
import type { Db } from '../../store/schema.js';
import { toIso } from '../../store/values.js';
import type { Message } from './message.js';

/**
 * Acknowledgements (docs/acknowledgements.md): who must acknowledge a message is decided at the
 * send and written with it (table `message_acks`, migration 018), in its group commit; the list
 * travels with the message in memory (`ackersOf`) to that write.
 */

const ackers = new WeakMap<Message, readonly string[]>();

/** Keeps who must acknowledge `message` (its `ack.required` is their number) for its write. */
export function rememberAckers(message: Message, agentIds: readonly string[]): void {
  ackers.set(message, agentIds);
}

/** Who must acknowledge the message (empty when it asks nobody, or was not sent here). */
export const ackersOf = (message: Message): readonly string[] => ackers.get(message) ?? [];

/** Rows per insert: well under SQLite's bound on a statement's parameters (3 each). */
const ROWS_PER_STATEMENT = 1000;

/** The `message_acks` rows of a batch's messages, for its transaction (none when no message asks). */
export function ackRowStatements(db: Db, messages: readonly Message[]): CompiledQuery[] {
  const rows = messages.flatMap((m) => ackersOf(m).map((agentId) => ({ message_id: m.id, agent_id: agentId, room_id: m.roomId, acked_at: null })));
  const statements: CompiledQuery[] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    statements.push(db.insertInto('message_acks').values(rows.slice(i, i + ROWS_PER_STATEMENT)).compile());
  }
  return statements;
}

/**
 * Marks the agent's acknowledgement, if it must give one and has not: true when this call did (its
 * count on the message is bumped and the message leaves the agent's attention, in the same
 * transaction). A concurrent call for the same pair waits for this one's row lock and then finds
 * it acknowledged (PostgreSQL), or runs after it (SQLite's one writer): only one call is first.
 */
export async function markAcked(trx: Db, message: Pick<Message, 'id' | 'roomId' | 'seq'>, agentId: string, at: string): Promise<boolean> {
  const result = await trx.updateTable('message_acks').set({ acked_at: at })
    .where('message_id', '=', message.id).where('agent_id', '=', agentId).where('acked_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await trx.updateTable('messages').set((eb) => ({ ack_count: eb('ack_count', '+', 1) })).where('id', '=', message.id).execute();
  await trx.deleteFrom('message_attention').where('agent_id', '=', agentId).where('room_id', '=', message.roomId).where('seq', '=', message.seq).execute();
  return true;
}

/** The agent's row for the message: undefined when it need not acknowledge it; `ackedAt` null while pending. */
export async function findAck(db: Db, messageId: string, agentId: string): Promise<{ ackedAt: string | null } | undefined> {
  const row = await db.selectFrom('message_acks').select('acked_at').where('message_id', '=', messageId).where('agent_id', '=', agentId).executeTakeFirst();
  return row === undefined ? undefined : { ackedAt: row.acked_at === null ? null : toIso(row.acked_at) };
}

/** Who acknowledged (oldest first) and who has not (by id). */
export async function listAcks(db: Db, messageId: string): Promise<{ acked: { agentId: string; at: string }[]; pending: string[] }> {
  const rows = await db.selectFrom('message_acks').select(['agent_id', 'acked_at']).where('message_id', '=', messageId).execute();
  const acked = rows.flatMap((r) => (r.acked_at === null ? [] : [{ agentId: r.agent_id, at: toIso(r.acked_at) }]));
  acked.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.agentId < b.agentId ? -1 : 1));
  const pending = rows.filter((r) => r.acked_at === null).map((r) => r.agent_id).sort();
  return { acked, pending };
}

/** A deleted message asks nothing more: its pending rows go (its acknowledgements stay). */
export async function dropPendingAcks(trx: Db, messageId: string): Promise<void> {
  await trx.deleteFrom('message_acks').where('message_id', '=', messageId).where('acked_at', 'is', null).execute();
}

/**
 * The agent's messages awaiting its acknowledgement, in its rooms (a token's `rooms` when given):
 * all of them (`readToo`), or only those at or before its read cursor (the unread ones are counted
 * by the attention rows already: attention.ts).
 */
function pendingQuery(db: Db, agentId: string, rooms: readonly string[] | null, readOnly: boolean) {
  let query = db
    .selectFrom('message_acks as k')
    .innerJoin('messages as m', 'm.id', 'k.message_id')
    .innerJoin('room_members as rm', (join) => join.onRef('rm.room_id', '=', 'k.room_id').onRef('rm.agent_id', '=', 'k.agent_id'))
    .where('k.agent_id', '=', agentId)
    .where('k.acked_at', 'is', null);
  if (readOnly) query = query.whereRef('m.seq', '<=', 'rm.read_seq');
  if (rooms !== null) query = query.where('k.room_id', 'in', rooms);
  return query;
}

/** How many of the agent's pending acknowledgements are of messages it has read (its attention beyond the unread). */
export async function countReadPendingAcks(db: Db, agentId: string, rooms: readonly string[] | null = null): Promise<number> {
  if (rooms !== null && rooms.length === 0) return 0;
  const row = await pendingQuery(db, agentId, rooms, true).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The pending acknowledgements' messages, oldest first (createdAt, then id), with their total; one extra row tells whether more follow. */
export async function pagePendingAcks(db: Db, agentId: string, limit: number, rooms: readonly string[] | null, readOnly: boolean) {
  if (rooms !== null && rooms.length === 0) return { rows: [], total: 0 };
  const rows = await pendingQuery(db, agentId, rooms, readOnly)
    .selectAll('m')
    .select((eb) => eb.fn.countAll<number | string>().over().as('pending_total'))
    .orderBy('m.created_at').orderBy('m.id')
    .limit(limit + 1)
    .execute();
  return { rows, total: rows.length > 0 ? Number(rows[0]!.pending_total) : 0 };
}
