import type { Kysely, Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Structured data and files on messages (docs/protocol.md, Data and files).
 * - `messages.data`: the message's JSON object, null when none.
 * - `files`: one row per upload. `completed_at` is null while the bytes are still arriving: such a
 *   row is visible to nobody, so a server killed during an upload leaves no half file, and the
 *   clean-up removes it later. `sha256` and `size` are set when it completes.
 * - `file_chunks`: the bytes, in numbered chunks, so that an upload is written and a download read
 *   one chunk at a time (never the whole file in memory) on both engines, and a byte range reads only
 *   the chunks it covers.
 * - `message_attachments`: which files a message carries, in the order given; by `file_id` for the
 *   access rule (a member of a room where a live message carries the file may read it) and the
 *   clean-up of files attached to nothing.
 */
export function dataAndFiles(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('messages').addColumn('data', t.json).execute();
      await db.schema
        .createTable('files')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('sha256', 'text')
        .addColumn('uploader_id', t.uuid, (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('completed_at', t.timestamp)
        .execute();
      await db.schema.createIndex('files_uploader_idx').on('files').column('uploader_id').execute();
      await db.schema.createIndex('files_created_idx').on('files').column('created_at').execute();
      await db.schema
        .createTable('file_chunks')
        .addColumn('file_id', t.uuid, (c) => c.notNull())
        .addColumn('n', 'integer', (c) => c.notNull())
        .addColumn('bytes', t.bytes, (c) => c.notNull())
        .addPrimaryKeyConstraint('file_chunks_pk', ['file_id', 'n'])
        .execute();
      await db.schema
        .createTable('message_attachments')
        .addColumn('message_id', t.uuid, (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('file_id', t.uuid, (c) => c.notNull())
        .addPrimaryKeyConstraint('message_attachments_pk', ['message_id', 'position'])
        .execute();
      await db.schema.createIndex('message_attachments_file_idx').on('message_attachments').column('file_id').execute();
    },
  };
}
