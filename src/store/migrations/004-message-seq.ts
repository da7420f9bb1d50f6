import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Sequence numbers and read cursors (docs/catch-up.md).
 * - `rooms.last_seq`: the room's latest `seq` (0 without messages). A send increments it in its own
 *   transaction; on PostgreSQL that update takes the room row's lock, so sends to one room are
 *   numbered one after the other in commit order, on any number of nodes.
 * - `messages.seq`: unique per room. Existing messages are numbered in id order (ids are UUID v7,
 *   time-ordered, so that is the order they were sent in).
 * - `room_members.read_seq`: existing memberships start at their room's `last_seq` (old history is
 *   not unread).
 * The SQL is the same on both engines (SQLite >= 3.33 has UPDATE ... FROM and window functions).
 */
export const messageSeq: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('rooms').addColumn('last_seq', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('messages').addColumn('seq', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('room_members').addColumn('read_seq', 'bigint', (c) => c.notNull().defaultTo(0)).execute();

    await sql`
      update messages set seq = numbered.n
      from (select id, row_number() over (partition by room_id order by id) as n from messages) as numbered
      where messages.id = numbered.id
    `.execute(db);
    await sql`
      update rooms set last_seq = coalesce((select max(m.seq) from messages m where m.room_id = rooms.id), 0)
    `.execute(db);
    await sql`
      update room_members set read_seq = (select r.last_seq from rooms r where r.id = room_members.room_id)
    `.execute(db);

    // Catch-up pages (`seq > N`), unread counts and the inbox read this index; it also makes a
    // reused number impossible.
    await db.schema.createIndex('messages_room_seq_uq').on('messages').columns(['room_id', 'seq']).unique().execute();
  },
};
