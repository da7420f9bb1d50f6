import type { Kysely, Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Threads, edits and deletions of messages (docs/threads-and-edits.md).
 * - `thread_id`: the root of the thread a reply is in (null for a message that is not a reply).
 * - `reply_count`, `last_reply_at`: on a root, kept by the send that stores a reply, in the same
 *   transaction (so a read gets them with the row, and a page of history needs no count per item).
 * - `edited_at`, `deleted_at`: null until the message is edited / deleted (a deleted message stays as
 *   a tombstone).
 * A thread's replies are read by `thread_id` in `seq` order: a partial index, over replies only.
 * Existing messages are not replies (replyTo had no effect before), so no backfill.
 */
export function threadsAndEdits(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('messages').addColumn('thread_id', t.uuid).execute();
      await db.schema.alterTable('messages').addColumn('reply_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('messages').addColumn('last_reply_at', t.timestamp).execute();
      await db.schema.alterTable('messages').addColumn('edited_at', t.timestamp).execute();
      await db.schema.alterTable('messages').addColumn('deleted_at', t.timestamp).execute();
      await db.schema
        .createIndex('messages_thread_seq_idx')
        .on('messages')
        .columns(['thread_id', 'seq'])
        .where((eb) => eb('thread_id', 'is not', null))
        .execute();
    },
  };
}
