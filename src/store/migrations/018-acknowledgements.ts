import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Importance and acknowledgements (docs/acknowledgements.md).
 * - `messages.importance`: low, normal, high or urgent ('normal' for every earlier message).
 * - `messages.ack_required`: how many agents must acknowledge the message, null when the send did
 *   not ask; `ack_count`: how many did (both kept on the message, so that every representation
 *   counts them without reading the acknowledgements).
 * - `message_acks`: one row per message and agent that must acknowledge it, written in the send's
 *   own transaction; `acked_at` null until it does. The partial index finds an agent's pending
 *   acknowledgements (its attention and the inbox's `filter=ack`) without reading the others.
 * - `webhook_deliveries.payload`: the `data` of a delivery that is not the message itself
 *   (`message.acked`), as JSON text; null for the others.
 */
export function acknowledgements(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('messages').addColumn('importance', 'text', (c) => c.notNull().defaultTo('normal')).execute();
      await db.schema.alterTable('messages').addColumn('ack_required', 'integer').execute();
      await db.schema.alterTable('messages').addColumn('ack_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema
        .createTable('message_acks')
        .addColumn('message_id', t.uuid, (c) => c.notNull())
        .addColumn('agent_id', t.uuid, (c) => c.notNull())
        .addColumn('room_id', t.uuid, (c) => c.notNull())
        .addColumn('acked_at', t.timestamp)
        .addPrimaryKeyConstraint('message_acks_pk', ['message_id', 'agent_id'])
        .execute();
      await sql`create index message_acks_pending_idx on message_acks (agent_id, room_id) where acked_at is null`.execute(db);
      await db.schema.alterTable('webhook_deliveries').addColumn('payload', t.json).execute();
    },
  };
}
