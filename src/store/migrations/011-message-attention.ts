import type { Kysely, Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Attention (docs/protocol.md, Attention): one row per message and agent it is for the attention
 * of, written in the send's own transaction, so that counting an agent's unread messages for its
 * attention reads this table by its key (agent, room, seq > read_seq) and never the messages.
 * Messages sent before this migration are for nobody's attention (mentions and replies did not
 * take effect then).
 */
export function messageAttention(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('message_attention')
        .addColumn('agent_id', t.uuid, (c) => c.notNull())
        .addColumn('room_id', t.uuid, (c) => c.notNull())
        .addColumn('seq', 'bigint', (c) => c.notNull())
        .addColumn('message_id', t.uuid, (c) => c.notNull())
        .addPrimaryKeyConstraint('message_attention_pk', ['agent_id', 'room_id', 'seq'])
        .execute();
    },
  };
}
