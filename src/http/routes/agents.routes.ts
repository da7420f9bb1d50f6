import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';

export function agentsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/api/v1/agents', async (request, reply) => {
    const agent = await ctx.agents.create(request.principal, request.body);
    return reply.status(201).send(agent);
  });

  app.get('/api/v1/agents', async (request) => ctx.agents.list(request.principal));
}
