import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import {
  AgentIdParams, AgentTokenParams, IssuedTokenSchema, TokenListQuery, IssueTokenInput, SessionInput, SessionSchema, TokenList, TokenPrefixParams,
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

  app.get<{ Params: { id: string }; Querystring: { kind?: string } }>('/api/v1/agents/:id/tokens', {
    schema: describe({
      operationId: 'listTokens', summary: 'List an agent\'s API tokens and OAuth grants, without their secrets (admin; the agent itself with kind=oauth)', tags: ['auth'], security: SECURITY.jwt,
      description: 'Every token of the agent, revoked and expired ones included, oldest first: the prefix names one to revoke. `lastUsedAt` is the last session exchange, to the minute. '
        + 'Grants to OAuth clients (docs/oauth.md) are listed too, with `kind: "oauth"`, the client\'s name and the scope actions granted; `kind: "api"` marks API tokens. '
        + '`?kind=` lists one kind only; with `kind=oauth` an agent lists its own grants without being an admin.',
      params: AgentIdParams,
      querystring: TokenListQuery,
      success: { 200: { schema: TokenList, description: 'The agent\'s tokens' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.tokens.list(request.principal, request.params.id, request.query.kind));

  app.delete<{ Params: { id: string; tokenId: string } }>('/api/v1/agents/:id/tokens/:tokenId', {
    schema: describe({
      operationId: 'revokeAgentToken', summary: 'Revoke one of an agent\'s API tokens or OAuth grants by id (admin in strict mode, or the agent itself)', tags: ['auth'], security: SECURITY.jwtWhenStrict,
      description: 'Revoking an OAuth grant ends its access and refresh tokens and closes its live MCP requests (docs/oauth.md); revoking an API token also ends the grants signed in with it.',
      params: AgentTokenParams,
      success: { 204: { schema: null, description: 'Revoked' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    await ctx.tokens.revokeById(request.principal, request.params.id, request.params.tokenId);
    return reply.status(204).send();
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
