import type { CompiledQuery, Kysely, Transaction } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { prepared } from '../../store/prepared.js';
import type { DB } from '../../store/schema.js';
import { fromJson, nowIso, toIso } from '../../store/values.js';
import { createWriteBatcher, type WriteBatcher, type WriteBatcherOptions } from '../../store/write-batcher.js';

export type AuditEvent =
  | 'agent-created'
  | 'agent-disabled'
  | 'agent-enabled'
  | 'token-issued'
  | 'token-revoked'
  | 'jwt-issued'
  | 'room-created'
  | 'message-sent'
  | 'member-added'
  | 'member-removed'
  | 'channel-created'
  | 'post-created'
  | 'reply-created'
  | 'reaction-toggled'
  | 'webhook-created'
  | 'webhook-deleted';

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
export async function recordAudit(db: Kysely<DB> | Transaction<DB>, entry: AuditEntry): Promise<void> {
  await db.executeQuery(auditStatement(db, entry));
}

/** The statement that records `entry`, for a transaction run as statements (a group commit). */
export function auditStatement(db: Kysely<DB> | Transaction<DB>, entry: AuditEntry): CompiledQuery {
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
export function auditRow(entry: AuditEntry): { id: string; event: string; actorId: string | null; subjectId: string | null; detail: string; createdAt: string } {
  return { id: uuidv7(), event: entry.event, actorId: entry.actorId, subjectId: entry.subjectId, detail: JSON.stringify(entry.detail ?? {}), createdAt: nowIso() };
}

/** auditStatement for several entries, as one multi-row insert (PostgreSQL's group commit; at least one entry). */
export function auditEntriesStatement(db: Kysely<DB> | Transaction<DB>, entries: readonly AuditEntry[]): CompiledQuery {
  return db.insertInto('audit_log').values(entries.map(auditRow).map((r) => ({
    id: r.id, event: r.event, actor_id: r.actorId, subject_id: r.subjectId, detail: r.detail, created_at: r.createdAt,
  }))).compile();
}

/**
 * Records that stand alone (no change of their own to commit with), group-committed like messages
 * (write-batcher.ts): each `write` resolves once its record is committed, and records that arrive
 * together, or within `minIntervalMs` while they arrive at `spaceFromRate` a second, share a commit.
 */
export function createAuditBatcher(db: Kysely<DB>, options: WriteBatcherOptions): WriteBatcher<AuditEntry> {
  return createWriteBatcher<AuditEntry>(db, {
    write: (db, entries) => ({ statements: entries.map((entry) => auditStatement(db, entry)) }),
  }, options);
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
