import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import type { HistoryQuery } from '../../core/messages/messages.service.js';
import { wantsAfterSeq } from '../../core/messages/sync.js';

// REST items name the author `senderId`, as the domain Message does; WebSocket payloads rename it.

export function messagesRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: { id: string }; Querystring: HistoryQuery & { afterSeq?: string } }>('/api/v1/rooms/:id/messages', async (request) => {
    const { before, cursor, limit, afterSeq } = request.query;
    // `afterSeq`: forward catch-up, oldest first (PHASE2.md 1.2); otherwise history, newest first.
    if (wantsAfterSeq(request.query)) {
      const page = await ctx.messages.sync(request.principal, request.params.id, { afterSeq, before, cursor, limit });
      return { messages: page.messages, lastSeq: page.lastSeq, hasMore: page.hasMore };
    }
    const page = await ctx.messages.history(request.principal, request.params.id, { before, cursor, limit });
    return { messages: page.messages, nextCursor: page.nextCursor, hasMore: page.hasMore };
  });

  app.post<{ Params: { id: string } }>('/api/v1/rooms/:id/messages', async (request, reply) => {
    const { message, created } = await ctx.messages.send(request.principal, request.params.id, request.body);
    // A clientMsgId repeat answers 200 with the original message; a new message is 201.
    return reply.status(created ? 201 : 200).send(message);
  });
}
