import { sql, type CompiledQuery } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { prepared } from '../../store/prepared.js';
import type { Db } from '../../store/schema.js';
import type { LastRead } from '../../store/write-batcher.js';
import { lastSeqsQuery } from '../rooms/rooms.store.js';
import type { Message } from './message.js';
import { withAttachments } from './attachments.store.js';
import { toMessage } from './messages.store.js';

/**
 * Sequence numbers (docs/catch-up.md): `rooms.last_seq` is the counter, bumped in the transaction that
 * inserts the messages. On PostgreSQL the update takes the room row's lock until commit, so another
 * transaction (on any node) numbering the same room waits, then continues from the committed value:
 * no gap, no reuse, and the numbers follow the commit order. SQLite has one writer at a time anyway.
 *
 * The numbers are computed by the database, not read back in between: the counter is bumped by
 * the batch's count, and each insert takes `last_seq - fromEnd` from the row it just bumped (a read
 * in the transaction would cost a round trip to SQLite's writer thread, see write-batcher.ts). The
 * transaction's last read gives the counters back, and with them each message's number.
 */
const bumpLastSeqQuery = prepared((db, p: { roomId: string; count: number }) =>
  db.updateTable('rooms').set((eb) => ({ last_seq: eb('last_seq', '+', p.count) })).where('id', '=', p.roomId),
);
/**
 * PostgreSQL: every room of the batch bumped by one statement (one round trip, however many rooms).
 * The sub-select locks the rows in id order before the update touches any of them (a row is only
 * updated once the sub-select has returned, so locked, it), as the one-update-per-room order did.
 */
function bumpLastSeqsOnPostgres(db: Db, rooms: readonly string[], counts: readonly number[]): CompiledQuery {
  return sql`update rooms set last_seq = rooms.last_seq + c.n
    from (select id from rooms where id = any(${rooms}::uuid[]) order by id for update) as locked
    join unnest(${rooms}::uuid[], ${counts}::int[]) as c (id, n) on c.id = locked.id
    where rooms.id = c.id`.compile(db);
}
const afterSeqPageQuery = prepared((db, p: { roomId: string; afterSeq: number; upTo: number; rows: number }) =>
  db.selectFrom('messages').selectAll().where('room_id', '=', p.roomId).where('seq', '>', p.afterSeq).where('seq', '<=', p.upTo).orderBy('seq').limit(p.rows),
);

/** A room's counter as the batch's last read gives it back. */
export interface RoomCounter {
  id: string;
  last_seq: number;
}

/** How one transaction numbers its messages (`numberMessages`). */
export interface Numbering {
  /** The counters' updates, to run first in the transaction. */
  statements: CompiledQuery[];
  /** The rooms, in id order, and how many messages each gets (what `statements` bump). */
  rooms: string[];
  counts: number[];
  /** Per message, in the order given: how far below its room's new `last_seq` its number is. */
  fromEnd: number[];
  /** The read that gives the numbers back after the writes (the batch's last read), and applies them. */
  lastRead: LastRead<RoomCounter>;
}

/**
 * Bumps the counters of the rooms of one transaction's messages (given in send order), one update
 * per room (on PostgreSQL one statement for all), the rooms taken in id order: two transactions on different nodes that touch the same
 * rooms lock them in the same order, so they cannot deadlock. Each message's insert then takes
 * `last_seq - fromEnd[i]` (insertMessage); `lastRead` sets `seq` on the messages once committed.
 */
export function numberMessages(db: Db, messages: readonly Message[]): Numbering {
  const counts = new Map<string, number>();
  for (const message of messages) counts.set(message.roomId, (counts.get(message.roomId) ?? 0) + 1);
  const roomIds = [...counts.keys()].sort();
  const statements = dialectOf(db).name === 'postgres'
    ? [bumpLastSeqsOnPostgres(db, roomIds, roomIds.map((roomId) => counts.get(roomId)!))]
    : roomIds.map((roomId) => bumpLastSeqQuery.compile(db, { roomId, count: counts.get(roomId)! }));
  const left = new Map(counts);
  const fromEnd = messages.map((message) => {
    const after = left.get(message.roomId)! - 1;
    left.set(message.roomId, after);
    return after;
  });
  const query = lastSeqsQuery.compile(db, { rooms: dialectOf(db).idList(roomIds) });
  return {
    statements,
    rooms: roomIds,
    counts: roomIds.map((roomId) => counts.get(roomId)!),
    fromEnd,
    lastRead: {
      query,
      committed(rows) {
        const lastSeqs = new Map(rows.map((row) => [row.id, Number(row.last_seq)]));
        messages.forEach((message, i) => {
          const lastSeq = lastSeqs.get(message.roomId);
          // The counter row was bumped in this very transaction: it cannot be missing.
          if (lastSeq === undefined) throw new Error('room of a message not found while numbering it');
          message.seq = lastSeq - fromEnd[i]!;
        });
      },
    },
  };
}

/**
 * Oldest first: the messages with `afterSeq < seq <= upTo`. `upTo` is a `last_seq` read before, so
 * the range holds no gap (every number up to a committed `last_seq` was committed with it).
 * Fetches one extra row to tell whether more follow.
 */
export async function pageAfterSeq(db: Db, roomId: string, afterSeq: number, upTo: number, limit: number): Promise<{ messages: Message[]; hasMore: boolean }> {
  if (afterSeq >= upTo) return { messages: [], hasMore: false };
  const { rows } = await afterSeqPageQuery(db, { roomId, afterSeq, upTo, rows: limit + 1 });
  return { messages: await withAttachments(db, rows.slice(0, limit).map(toMessage)), hasMore: rows.length > limit };
}
