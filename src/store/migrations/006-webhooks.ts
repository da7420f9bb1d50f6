import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../database-handle.js';
import { columnTypes } from './column-types.js';

/**
 * Webhooks (docs/webhooks.md): the endpoints agents register, and the outbox of deliveries,
 * written in the transaction of the message they carry.
 * - `webhook_endpoints.secret` is kept as issued: it signs every delivery, so it cannot be hashed.
 *   `rooms` is the room restriction of the scoped JWT that created the endpoint (null: none).
 * - `webhook_deliveries.next_attempt_at` is when the delivery may be claimed next: a claim pushes it
 *   past the attempt's timeout (a lease), so a node that dies mid-attempt hands it on. Claims read
 *   the partial index of pending deliveries only; the log and the "last 20 failed" check read the
 *   endpoint's deliveries newest first (ids are UUIDv7: time-ordered).
 */
export function webhooks(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('agent_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('events', t.json, (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull().check(sql`mode in ('offline', 'always')`))
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('rooms', t.json)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('disabled_at', t.timestamp)
        .execute();
      await db.schema.createIndex('webhook_endpoints_agent_idx').on('webhook_endpoints').column('agent_id').execute();

      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('endpoint_id', t.uuid, (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('message_id', t.uuid, (c) => c.notNull().references('messages.id'))
        .addColumn('event', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'delivered', 'failed')`))
        .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', t.timestamp, (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('delivered_at', t.timestamp)
        .execute();
      await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute();
      await db.schema
        .createIndex('webhook_deliveries_due_idx')
        .on('webhook_deliveries')
        .column('next_attempt_at')
        .where(sql.ref('status'), '=', 'pending')
        .execute();
    },
  };
}
