import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { DirectoryParams, DirectoryQuerySchema, DirectorySchema } from '@agent-messaging/protocol';
import type { DirectoryQuery } from '../../core/directory/directory.service.js';
import { describe, SECURITY } from '../openapi.js';

export function directoryRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: { companyId: string }; Querystring: DirectoryQuery }>('/api/companies/:companyId/agents/directory', {
    schema: describe({
      operationId: 'directory', summary: 'The agents of the company, with whether each is online', tags: ['directory'], security: SECURITY.jwt,
      params: DirectoryParams, querystring: DirectoryQuerySchema,
      success: { 200: { schema: DirectorySchema, description: 'The directory' } },
      errors: [400, 401, 404],
    }),
  }, async (request) =>
    ctx.directory.list(request.principal, request.params.companyId, { role: request.query.role }));
}
