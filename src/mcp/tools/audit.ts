import { AUDIT_LIMITS } from '@agent-messaging/protocol';
import { Type } from '../../core/validation.js';
import { args, defineTool } from './define.js';

/** The audit log, for admins (REST: audit.routes.ts). */

export const AUDIT_TOOLS = {
  read_audit: defineTool({
    title: 'Read the audit log (admins)',
    description: `Reads the service's audit log, newest first: who (actorId) did what (event, e.g. "agent-created", "token-revoked", "room-created", "message-deleted") to what (subjectId: the agent, token, room, message, file or task) and when, with a small detail. Admins only. Filter by event, actorId and subjectId (all must match); to page back pass the returned nextCursor as before. At most ${AUDIT_LIMITS.max} records a call (default ${AUDIT_LIMITS.default}).`,
    input: args({
      event: Type.Optional(Type.String({ maxLength: 64, description: 'Only records of this event (e.g. "room-created").' })),
      actorId: Type.Optional(Type.String({ maxLength: 64, description: 'Only records of this acting agent (its id, a UUID).' })),
      subjectId: Type.Optional(Type.String({ maxLength: 64, description: 'Only records about this agent, token, room, message, file or task (its id, a UUID).' })),
      before: Type.Optional(Type.String({ maxLength: 64, description: 'A record id (nextCursor of a previous call): only older records.' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_LIMITS.max, description: `How many records at most (1 to ${AUDIT_LIMITS.max}, default ${AUDIT_LIMITS.default}).` })),
    }),
    readOnly: true,
    async run(query, { ctx, principal }) {
      const page = await ctx.audit.read(principal, query);
      const names = await ctx.agents.names(page.records.flatMap((r) => (r.actorId === null ? [] : [r.actorId])));
      const lines = page.records.map((r) => `[${r.createdAt}] ${r.event} by ${r.actorId === null ? 'an anonymous caller' : (names.get(r.actorId) ?? r.actorId)}, about ${r.subjectId ?? 'nothing'} (record ${r.id}) ${JSON.stringify(r.detail)}`);
      const footer = page.hasMore ? `Older records exist: call again with before "${page.nextCursor}".` : '';
      return { data: { ...page }, text: [...(lines.length === 0 ? ['No records.'] : ['(newest first)', ...lines]), footer].filter((l) => l !== '').join('\n') };
    },
  }),
};
