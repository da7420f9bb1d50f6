import { sql, type CompiledQuery, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { prepared } from '../../store/prepared.js';
import type { AuditLogTable, DB, Db } from '../../store/schema.js';
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
 *
 * AUDIT_EVENTS lists every event the service records (docs/protocol.md, Audit log, says what each
 * one's subject is).
 */
export const AUDIT_EVENTS = [
  'agent-created',
  'agent-updated',
  'agent-disabled',
  'agent-enabled',
  'token-issued',
  'token-revoked',
  'jwt-issued',
  'room-created',
  'message-sent',
  'message-edited',
  'message-deleted',
  'member-added',
  'member-removed',
  'channel-created',
  'post-created',
  'reply-created',
  'reaction-toggled',
  'webhook-created',
  'webhook-deleted',
  'file-uploaded',
  'task-created',
  'task-updated',
  'room-updated',
  'room-exported',
  'oauth-client-registered',
  'oauth-grant-created',
  'oauth-grant-revoked',
  'lease-granted',
  'lease-released',
] as const;

export type AuditEvent = (typeof AUDIT_EVENTS)[number];

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

const toRecord = (r: Selectable<AuditLogTable>): AuditRecord => ({
  id: r.id,
  event: r.event as AuditEvent,
  actorId: r.actor_id,
  subjectId: r.subject_id,
  detail: fromJson(r.detail) as Record<string, unknown>,
  createdAt: toIso(r.created_at),
});

/** What a page of the log is narrowed to (each filter optional, combined with AND); ids lowercase. */
export interface AuditFilter {
  event?: string;
  actorId?: string;
  subjectId?: string;
}

/** Where a record stands in the log's order (newest first by time, then id); null for an unknown id. */
export async function findAuditPosition(db: Db, id: string): Promise<{ id: string; createdAt: string } | null> {
  const row = await db.selectFrom('audit_log').select(['id', 'created_at']).where('id', '=', id).executeTakeFirst();
  return row ? { id: row.id, createdAt: toIso(row.created_at) } : null;
}

/**
 * One page of the log, newest first by time then id (docs/protocol.md, Audit log): the records after
 * `before` (a position from findAuditPosition) that match the filter. Each filter has an index that
 * ends in (created_at, id) (migration 014), so the page is read in order from where it starts.
 */
export async function pageAudit(
  db: Db,
  options: AuditFilter & { before: { id: string; createdAt: string } | null; limit: number },
): Promise<{ records: AuditRecord[]; hasMore: boolean }> {
  let query = db.selectFrom('audit_log').selectAll();
  if (options.event !== undefined) query = query.where('event', '=', options.event);
  if (options.actorId !== undefined) query = query.where('actor_id', '=', options.actorId);
  if (options.subjectId !== undefined) query = query.where('subject_id', '=', options.subjectId);
  const { before } = options;
  if (before !== null) {
    query = query.where((eb) => eb.or([
      eb('created_at', '<', before.createdAt),
      eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)]),
    ]));
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(options.limit + 1).execute();
  return { records: rows.slice(0, options.limit).map(toRecord), hasMore: rows.length > options.limit };
}

/** For operators and tests: the most recent records of one event. */
export async function listAudit(db: Kysely<DB>, event: AuditEvent, limit = 100): Promise<AuditRecord[]> {
  return (await pageAudit(db, { event, before: null, limit })).records;
}
