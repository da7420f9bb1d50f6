import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Streamed messages (docs/streaming.md): `stream_state` is null for a message sent whole, 'open'
 * while its sender streams it, then 'complete' or 'interrupted'; `stream_active_at` is the time of
 * its last stored append (null once ended), which the idle end reads; `stream_via` 'ws' when it was
 * started over the WebSocket (its sender's sockets count too). The partial index holds only the
 * open messages: the idle sweep and the per-agent count read it.
 */
export function streamedMessages(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('messages').addColumn('stream_state', 'text').execute();
      await db.schema.alterTable('messages').addColumn('stream_active_at', t.timestamp).execute();
      await db.schema.alterTable('messages').addColumn('stream_via', 'text').execute();
      await sql`create index messages_open_streams_idx on messages (sender_id) where stream_state = 'open'`.execute(db);
    },
  };
}
