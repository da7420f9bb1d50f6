import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { AuditPageSchema, AuditQuerySchema } from '@agent-messaging/protocol';
import type { AuditQuery } from '../../core/audit/audit.service.js';
import { describe, SECURITY } from '../openapi.js';

// docs/protocol.md, Audit log: admins only, in both modes.
export function auditRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: AuditQuery }>('/api/v1/audit', {
    schema: describe({
      operationId: 'readAudit', summary: 'Read the audit log, newest first (admins)', tags: ['audit'], security: SECURITY.jwt,
      description: 'Every audit record the service wrote (docs/protocol.md, Audit log, lists the events and what subjectId names in each), newest first by createdAt then id, filtered by event, actorId and subjectId (combined with AND). An admin JWT in both modes; a scoped token needs the admin action. Pass nextCursor as before for the next page; a before that names no record is 400. No record holds a token, a JWT or a secret.',
      querystring: AuditQuerySchema,
      success: { 200: { schema: AuditPageSchema, description: '{records (newest first), nextCursor, hasMore}' } },
      errors: [400, 401, 403],
    }),
  }, async (request) => ctx.audit.read(request.principal, request.query));
}
