import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import type { SearchMessagesQuery } from '../../core/search/search.service.js';

export function searchRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: SearchMessagesQuery }>('/api/v1/search/messages', async (request) => {
    const { q, roomId, before, limit } = request.query;
    const page = await ctx.search.searchMessages(request.principal, { q, roomId, before, limit });
    return { results: page.results, nextCursor: page.nextCursor, hasMore: page.hasMore };
  });
}
