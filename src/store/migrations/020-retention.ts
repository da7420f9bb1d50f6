import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Retention (docs/retention.md): per room `retention_days` (null: the service's RETENTION_DAYS) and
 * `legal_hold` (1: the sweep leaves the room alone). The sweep deletes a room's oldest messages in
 * `seq` order, batch by batch, with the rows keyed by their ids: two indexes let it find a batch's
 * attention rows (by room and seq) and webhook deliveries (by message) without scanning the tables.
 */
export const retention: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('rooms').addColumn('retention_days', 'integer').execute();
    await db.schema.alterTable('rooms').addColumn('legal_hold', 'integer', (c) => c.notNull().defaultTo(sql.lit(0))).execute();
    await db.schema.createIndex('message_attention_room_seq_idx').on('message_attention').columns(['room_id', 'seq']).execute();
    await db.schema.createIndex('webhook_deliveries_message_idx').on('webhook_deliveries').column('message_id').execute();
  },
};
