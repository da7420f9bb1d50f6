import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import {
  AgentIdParams, IssuedTokenSchema, IssueTokenInput, SessionInput, SessionSchema, TokenPrefixParams,
} from '@agent-messaging/protocol';
import { describe, SECURITY } from '../openapi.js';
import { bearerOf } from '../plugins/auth.js';

export function authRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/tokens', {
    schema: describe({
      operationId: 'issueToken', summary: 'Issue an API token to an agent (admin in strict mode)', tags: ['auth'], security: SECURITY.jwtWhenStrict,
      params: AgentIdParams, body: IssueTokenInput,
      success: { 201: { schema: IssuedTokenSchema, description: 'The token; `token` is shown only here' } },
      errors: [401, 403, 404],
    }),
  }, async (request, reply) => {
    const issued = await ctx.tokens.issue(request.principal, request.params.id, request.body);
    return reply.status(201).send(issued);
  });

  app.delete<{ Params: { prefix: string } }>('/api/v1/tokens/:prefix', {
    schema: describe({
      operationId: 'revokeToken', summary: 'Revoke an API token by its prefix (admin in strict mode)', tags: ['auth'], security: SECURITY.jwtWhenStrict,
      params: TokenPrefixParams,
      success: { 204: { schema: null, description: 'Revoked' } },
      errors: [401, 403, 404],
    }),
  }, async (request, reply) => {
    await ctx.tokens.revoke(request.principal, request.params.prefix);
    return reply.status(204).send();
  });

  app.post('/api/v1/sessions', {
    schema: describe({
      operationId: 'createSession', summary: 'Exchange an API token for a session JWT', tags: ['auth'], security: SECURITY.apiToken,
      description: 'The API token comes as `Authorization: Bearer agt_...` or as the body `{apiToken}`; both and different: 400.',
      body: SessionInput,
      success: { 201: { schema: SessionSchema, description: 'A session JWT and when it expires' } },
      errors: [401, 403],
    }),
  }, async (request, reply) => {
    const session = await ctx.sessions.exchange({ bearer: bearerOf(request), body: request.body });
    return reply.status(201).send(session);
  });
}
