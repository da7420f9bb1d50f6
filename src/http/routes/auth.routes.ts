import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { bearerOf } from '../plugins/auth.js';

export function authRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/tokens', async (request, reply) => {
    const issued = await ctx.tokens.issue(request.principal, request.params.id, request.body);
    return reply.status(201).send(issued);
  });

  app.delete<{ Params: { prefix: string } }>('/api/v1/tokens/:prefix', async (request, reply) => {
    await ctx.tokens.revoke(request.principal, request.params.prefix);
    return reply.status(204).send();
  });

  app.post('/api/v1/sessions', async (request, reply) => {
    const session = await ctx.sessions.exchange({ bearer: bearerOf(request), body: request.body });
    return reply.status(201).send(session);
  });
}
