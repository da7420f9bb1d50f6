import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';

export function agentsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/api/v1/agents', async (request, reply) => {
    const agent = await ctx.agents.create(request.principal, request.body);
    return reply.status(201).send(agent);
  });

  app.get('/api/v1/agents', async (request) => ctx.agents.list(request.principal));

  // PHASE2.md section 7.
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/disable', async (request) => ctx.agents.disable(request.principal, request.params.id));
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/enable', async (request) => ctx.agents.enable(request.principal, request.params.id));
}
