import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { SearchPageSchema, SearchQuerySchema } from '@agent-messaging/protocol';
import type { SearchMessagesQuery } from '../../core/search/search.service.js';
import { describe, SECURITY } from '../openapi.js';

export function searchRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: SearchMessagesQuery }>('/api/v1/search/messages', {
    schema: describe({
      operationId: 'searchMessages', summary: 'Search the messages of the rooms the caller is a member of (an admin: all), newest first', tags: ['messages'], security: SECURITY.jwt,
      querystring: SearchQuerySchema,
      success: { 200: { schema: SearchPageSchema, description: 'Matching messages' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => {
    const { q, roomId, before, limit } = request.query;
    const page = await ctx.search.searchMessages(request.principal, { q, roomId, before, limit });
    return { results: page.results, nextCursor: page.nextCursor, hasMore: page.hasMore };
  });
}
