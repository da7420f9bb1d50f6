import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { InboxPageSchema, InboxQuerySchema } from '@agent-messaging/protocol';
import type { InboxQuery } from '../../core/inbox/inbox.service.js';
import { describe, SECURITY } from '../openapi.js';

export function inboxRoutes(app: FastifyInstance, ctx: AppContext): void {
  // `wait` holds the request (docs/catch-up.md, the inbox); a client that goes away withdraws its waiter.
  app.get<{ Querystring: InboxQuery }>('/api/v1/inbox', {
    schema: describe({
      operationId: 'inbox', summary: "Unread messages of all the caller's rooms, oldest first; can wait for one", tags: ['messages'], security: SECURITY.jwt,
      description: 'Reading marks nothing read (POST /api/v1/rooms/{id}/read does). With `wait`, an empty inbox holds the request until a message from someone else arrives in one of the rooms, or the wait ends. `filter=attention` gives only the messages for the caller\'s attention (it mentions the caller, is in a direct room, replies to the caller\'s message or in a thread it started), and only such a message ends its wait. Every page carries unreadTotal and attentionTotal.',
      querystring: InboxQuerySchema,
      success: { 200: { schema: InboxPageSchema, description: 'The unread messages' } },
      errors: [400, 401],
    }),
  }, async (request, reply) => {
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    const { limit, wait, filter } = request.query;
    return ctx.inbox.fetch(request.principal, { limit, wait, filter }, gone.signal);
  });
}
