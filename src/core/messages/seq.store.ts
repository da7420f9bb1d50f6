import type { Kysely, Transaction } from 'kysely';
import { prepared } from '../../store/prepared.js';
import type { DB } from '../../store/schema.js';
import type { Message } from './message.js';
import { toMessage } from './messages.store.js';

type Db = Kysely<DB> | Transaction<DB>;

/**
 * Sequence numbers (PHASE2.md 1.1): `rooms.last_seq` is the counter, bumped in the transaction that
 * inserts the messages. On PostgreSQL the update takes the room row's lock until commit, so another
 * transaction (on any node) numbering the same room waits, then continues from the committed value:
 * no gap, no reuse, and the numbers follow the commit order. SQLite has one writer at a time anyway.
 */
const bumpLastSeqQuery = prepared((db, p: { roomId: string; count: number }) =>
  db.updateTable('rooms').set((eb) => ({ last_seq: eb('last_seq', '+', p.count) })).where('id', '=', p.roomId).returning('last_seq'),
);
const lastSeqQuery = prepared((db, p: { roomId: string }) => db.selectFrom('rooms').select('last_seq').where('id', '=', p.roomId));
const afterSeqPageQuery = prepared((db, p: { roomId: string; afterSeq: number; upTo: number; rows: number }) =>
  db.selectFrom('messages').selectAll().where('room_id', '=', p.roomId).where('seq', '>', p.afterSeq).where('seq', '<=', p.upTo).orderBy('seq').limit(p.rows),
);

/**
 * Sets `seq` on each message (one transaction's worth, in the order given). One counter update per
 * room, the rooms taken in id order: two transactions on different nodes that touch the same rooms
 * lock them in the same order, so they cannot deadlock.
 */
export async function assignSeqs(trx: Transaction<DB>, messages: readonly Message[]): Promise<void> {
  const byRoom = new Map<string, Message[]>();
  for (const message of messages) {
    const list = byRoom.get(message.roomId);
    if (list) list.push(message);
    else byRoom.set(message.roomId, [message]);
  }
  for (const roomId of [...byRoom.keys()].sort()) {
    const list = byRoom.get(roomId)!;
    const row = (await bumpLastSeqQuery(trx, { roomId, count: list.length })).rows[0];
    if (row === undefined) throw new Error('room of a message not found while numbering it');
    const first = Number(row.last_seq) - list.length + 1;
    list.forEach((message, i) => {
      message.seq = first + i;
    });
  }
}

/** The room's latest `seq` (0 without messages); null when the room does not exist. */
export async function findLastSeq(db: Db, roomId: string): Promise<number | null> {
  const row = (await lastSeqQuery(db, { roomId })).rows[0];
  return row === undefined ? null : Number(row.last_seq);
}

/** `{roomId: lastSeq}` for the given rooms (those that exist). */
export async function findLastSeqs(db: Db, roomIds: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (roomIds.length === 0) return out;
  const rows = await db.selectFrom('rooms').select(['id', 'last_seq']).where('id', 'in', [...roomIds]).execute();
  for (const row of rows) out[row.id] = Number(row.last_seq);
  return out;
}

/**
 * Oldest first: the messages with `afterSeq < seq <= upTo`. `upTo` is a `last_seq` read before, so
 * the range holds no gap (every number up to a committed `last_seq` was committed with it).
 * Fetches one extra row to tell whether more follow.
 */
export async function pageAfterSeq(db: Db, roomId: string, afterSeq: number, upTo: number, limit: number): Promise<{ messages: Message[]; hasMore: boolean }> {
  if (afterSeq >= upTo) return { messages: [], hasMore: false };
  const { rows } = await afterSeqPageQuery(db, { roomId, afterSeq, upTo, rows: limit + 1 });
  return { messages: rows.slice(0, limit).map(toMessage), hasMore: rows.length > limit };
}
