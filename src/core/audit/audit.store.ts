import { sql, type CompiledQuery, type Kysely, type RawBuilder } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { prepared } from '../../store/prepared.js';
import type { DB, Db } from '../../store/schema.js';
import { fromJson, nowIso, toIso } from '../../store/values.js';

/**
 * The one audit writer: every record is built here, by `auditStatement` or, for a statement that
 * inserts several, `auditRow` (its id, its time, its detail as JSON). It reaches the database in one of three
 * ways, by what it records:
 * - with the change it records, in the caller's transaction (`recordAudit`): a room, a token, ...;
 * - with the change it records, in a group commit of statements (`auditStatement`): a message; on
 *   PostgreSQL the batch's rows (`auditRow`) inside its one statement (messages.store.ts) or as one
 *   multi-row insert (`auditEntriesStatement`);
 * - alone, group-committed (sessions.service.ts, with the token's `lastUsedAt`): `jwt-issued`,
 *   which has no change of its own to commit with.
 */
export type AuditEvent =
  | 'agent-created'
  | 'agent-disabled'
  | 'agent-enabled'
  | 'token-issued'
  | 'token-revoked'
  | 'jwt-issued'
  | 'room-created'
  | 'message-sent'
  | 'message-edited'
  | 'message-deleted'
  | 'member-added'
  | 'member-removed'
  | 'channel-created'
  | 'post-created'
  | 'reply-created'
  | 'reaction-toggled'
  | 'webhook-created'
  | 'webhook-deleted'
  | 'task-created'
  | 'task-updated';

export interface AuditEntry {
  event: AuditEvent;
  actorId: string | null;
  subjectId: string | null;
  /** Small, never secret. */
  detail?: Record<string, unknown>;
}

export interface AuditRecord extends Required<AuditEntry> {
  id: string;
  createdAt: string;
}

// Compiled once: one of these goes with every message sent.
const insertAuditQuery = prepared((db, p: { id: string; event: string; actorId: string | null; subjectId: string | null; detail: string; createdAt: string }) =>
  db.insertInto('audit_log').values({ id: p.id, event: p.event, actor_id: p.actorId, subject_id: p.subjectId, detail: p.detail, created_at: p.createdAt }),
);

/** Written inside the caller's transaction, so the record exists exactly when the change does. */
export async function recordAudit(db: Db, entry: AuditEntry): Promise<void> {
  await db.executeQuery(auditStatement(db, entry));
}

/** The statement that records `entry`, for a transaction run as statements (a group commit). */
export function auditStatement(db: Db, entry: AuditEntry): CompiledQuery {
  return insertAuditQuery.compile(db, {
    id: uuidv7(),
    event: entry.event,
    actorId: entry.actorId,
    subjectId: entry.subjectId,
    detail: JSON.stringify(entry.detail ?? {}),
    createdAt: nowIso(),
  });
}

/** The row that records `entry` (a fresh id, now), for a statement that inserts several (a group commit on PostgreSQL). */
export interface AuditRow { id: string; event: string; actorId: string | null; subjectId: string | null; detail: string; createdAt: string }

export function auditRow(entry: AuditEntry): AuditRow {
  return { id: uuidv7(), event: entry.event, actorId: entry.actorId, subjectId: entry.subjectId, detail: JSON.stringify(entry.detail ?? {}), createdAt: nowIso() };
}

/** auditStatement for several entries, as one multi-row insert (PostgreSQL's group commit; at least one entry). */
export function auditEntriesStatement(db: Db, entries: readonly AuditEntry[]): CompiledQuery {
  return db.insertInto('audit_log').values(entries.map(auditRow).map((r) => ({
    id: r.id, event: r.event, actor_id: r.actorId, subject_id: r.subjectId, detail: r.detail, created_at: r.createdAt,
  }))).compile();
}

/**
 * The insert of `rows` (auditRow) as a part of a larger PostgreSQL statement (a data-modifying CTE of
 * the send's one-statement group commit, messages.store.ts): one array parameter per column.
 */
export function auditRowsInsertOnPostgres(rows: readonly AuditRow[]): RawBuilder<unknown> {
  return sql`insert into audit_log (id, event, actor_id, subject_id, detail, created_at)
      select a.id, a.event, a.actor_id, a.subject_id, a.detail::jsonb, a.created_at
      from unnest(${rows.map((a) => a.id)}::uuid[], ${rows.map((a) => a.event)}::text[], ${rows.map((a) => a.actorId)}::uuid[],
        ${rows.map((a) => a.subjectId)}::uuid[], ${rows.map((a) => a.detail)}::text[], ${rows.map((a) => a.createdAt)}::timestamptz[])
        as a (id, event, actor_id, subject_id, detail, created_at)`;
}

/** For operators and tests: the most recent records of one event. */
export async function listAudit(db: Kysely<DB>, event: AuditEvent, limit = 100): Promise<AuditRecord[]> {
  const rows = await db.selectFrom('audit_log').selectAll().where('event', '=', event).orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({
    id: r.id,
    event: r.event as AuditEvent,
    actorId: r.actor_id,
    subjectId: r.subject_id,
    detail: fromJson(r.detail) as Record<string, unknown>,
    createdAt: toIso(r.created_at),
  }));
}
