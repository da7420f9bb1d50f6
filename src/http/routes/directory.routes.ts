import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import type { DirectoryQuery } from '../../core/directory/directory.service.js';

export function directoryRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: { companyId: string }; Querystring: DirectoryQuery }>('/api/companies/:companyId/agents/directory', async (request) =>
    ctx.directory.list(request.principal, request.params.companyId, { role: request.query.role }));
}
