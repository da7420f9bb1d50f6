import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import type { InboxQuery } from '../../core/inbox/inbox.service.js';

export function inboxRoutes(app: FastifyInstance, ctx: AppContext): void {
  // `wait` holds the request (PHASE2.md 1.4); a client that goes away withdraws its waiter.
  app.get<{ Querystring: InboxQuery }>('/api/v1/inbox', async (request, reply) => {
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    const { limit, wait } = request.query;
    return ctx.inbox.fetch(request.principal, { limit, wait }, gone.signal);
  });
}
