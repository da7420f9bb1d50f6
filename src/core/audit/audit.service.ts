import type { Kysely } from 'kysely';
import { AUDIT_LIMITS, AUDIT_EVENT_PATTERN } from '@agent-messaging/protocol';
import { validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import type { Authz } from '../authz/authz.js';
import { parsePageLimit } from '../paging.js';
import type { Principal } from '../principal.js';
import { parseId } from '../validation.js';
import { findAuditPosition, pageAudit, type AuditRecord } from './audit.store.js';

export interface AuditQuery {
  event?: unknown;
  actorId?: unknown;
  subjectId?: unknown;
  before?: unknown;
  limit?: unknown;
}

export interface AuditPage {
  records: AuditRecord[];
  /** The id of the page's last record (the next page's `before`); null when `hasMore` is false. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface AuditService {
  /**
   * docs/protocol.md, Audit log: a page of the log, newest first, for admins only in both modes (a
   * scoped token needs `admin`). REST, MCP `read_audit`, `ams audit` and the console read it here.
   */
  read(principal: Principal | null, query: AuditQuery): Promise<AuditPage>;
}

const EVENT_RE = new RegExp(AUDIT_EVENT_PATTERN);
const given = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

export function createAuditService(deps: { db: Kysely<DB>; authz: Authz }): AuditService {
  const { db, authz } = deps;
  return {
    async read(principal, query) {
      authz.requireAdmin(principal);
      const limit = parsePageLimit(query.limit, AUDIT_LIMITS);
      if (given(query.event) && (typeof query.event !== 'string' || !EVENT_RE.test(query.event))) {
        throw validationError({ event: 'must be an event name: lowercase letters, digits and hyphens (e.g. "room-created"), at most 64 characters' });
      }
      const event = given(query.event) ? (query.event as string) : undefined;
      const actorId = given(query.actorId) ? parseId(query.actorId, 'actorId') : undefined;
      const subjectId = given(query.subjectId) ? parseId(query.subjectId, 'subjectId') : undefined;
      const before = given(query.before) ? await findAuditPosition(db, parseId(query.before, 'before')) : null;
      if (given(query.before) && before === null) throw validationError({ before: 'is not the id of an audit record' });
      const { records, hasMore } = await pageAudit(db, { event, actorId, subjectId, before, limit });
      return { records, nextCursor: hasMore ? records[records.length - 1]!.id : null, hasMore };
    },
  };
}
