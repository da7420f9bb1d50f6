import { IdString, Nullable, Timestamp } from './common.schema.js';
import { Type, Text, Uuid } from './text.js';

/** Records of one page of the audit log: by default and at most (docs/protocol.md, Audit log). */
export const AUDIT_LIMITS = { default: 50, max: 100 };

/** An event name: lowercase words joined by hyphens (`room-created`); the filter is matched exactly. */
export const AUDIT_EVENT_PATTERN = '^[a-z][a-z0-9-]{0,63}$';

/** `GET /api/v1/audit`: every filter optional, combined with AND; `before` is the previous page's `nextCursor`. */
export const AuditQuerySchema = Type.Object({
  event: Type.Optional(Text({ pattern: AUDIT_EVENT_PATTERN, description: 'Only records of this event (e.g. "room-created")' })),
  actorId: Type.Optional(Uuid({ description: 'Only records of this acting agent' })),
  subjectId: Type.Optional(Uuid({ description: 'Only records about this agent, token, room, message, file or task' })),
  before: Type.Optional(Uuid({ description: 'A record id (the nextCursor of the previous page): only older records' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_LIMITS.max, default: AUDIT_LIMITS.default })),
});

export const AuditRecordSchema = Type.Object(
  {
    id: IdString(),
    event: Type.String({ description: 'What happened (docs/protocol.md, Audit log, lists every event)' }),
    actorId: Nullable(IdString('The agent that acted; null for an anonymous caller in open mode')),
    subjectId: Nullable(IdString('What the event is about: an agent, token, room, message, file, task, webhook, channel or post')),
    detail: Type.Record(Type.String(), Type.Unknown(), { description: 'A small JSON object of ids and names; never a secret' }),
    createdAt: Timestamp(),
  },
  { title: 'AuditRecord' },
);

export const AuditPageSchema = Type.Object(
  {
    records: Type.Array(AuditRecordSchema, { description: 'Newest first (by createdAt, then id)' }),
    nextCursor: Nullable(IdString('The id of the last record: pass it as before for the next page; null when hasMore is false')),
    hasMore: Type.Boolean(),
  },
  { title: 'AuditPage' },
);
