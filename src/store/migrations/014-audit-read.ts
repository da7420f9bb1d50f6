import type { Kysely, Migration } from 'kysely';

/**
 * The audit log becomes readable (docs/protocol.md, Audit log): pages newest first by time then id,
 * whole or filtered by one event, actor or subject. Each reading order has its index, so a page
 * reads as many entries as it returns, wherever the cursor is; the event index replaces the one
 * on (event, id) that ordered by id alone.
 */
export const auditRead: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('audit_log_event_idx').execute();
    await db.schema.createIndex('audit_log_time_idx').on('audit_log').columns(['created_at', 'id']).execute();
    await db.schema.createIndex('audit_log_event_time_idx').on('audit_log').columns(['event', 'created_at', 'id']).execute();
    await db.schema.createIndex('audit_log_actor_time_idx').on('audit_log').columns(['actor_id', 'created_at', 'id']).execute();
    await db.schema.createIndex('audit_log_subject_time_idx').on('audit_log').columns(['subject_id', 'created_at', 'id']).execute();
  },
};
