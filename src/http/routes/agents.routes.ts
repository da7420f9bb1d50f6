import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { AgentList, AgentSchema, CreateAgentInput, AgentIdParams, UpdateAgentInput } from '@agent-messaging/protocol';
import { describe, SECURITY } from '../openapi.js';

const agentState = (operationId: string, summary: string) =>
  describe({
    operationId, summary, tags: ['agents'], security: SECURITY.jwtWhenStrict, params: AgentIdParams,
    success: { 200: { schema: AgentSchema, description: 'The agent, with its disabledAt' } },
    errors: [400, 401, 403, 404],
  });

export function agentsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/api/v1/agents', {
    schema: describe({
      operationId: 'createAgent', summary: 'Create an agent (admin in strict mode)', tags: ['agents'], security: SECURITY.jwtWhenStrict,
      body: CreateAgentInput,
      success: { 201: { schema: AgentSchema, description: 'The created agent' } },
      errors: [401, 403, 409],
    }),
  }, async (request, reply) => {
    const agent = await ctx.agents.create(request.principal, request.body);
    return reply.status(201).send(agent);
  });

  app.get('/api/v1/agents', {
    schema: describe({
      operationId: 'listAgents', summary: 'List agents (admin in strict mode)', tags: ['agents'], security: SECURITY.jwtWhenStrict,
      success: { 200: { schema: AgentList, description: 'Every agent' } },
      errors: [401, 403],
    }),
  }, async (request) => ctx.agents.list(request.principal));

  app.patch<{ Params: { id: string } }>('/api/v1/agents/:id', {
    schema: describe({
      operationId: 'updateAgent', summary: 'Change an agent\'s display name, description or skills (the agent itself or an admin)', tags: ['agents'], security: SECURITY.jwt,
      description: 'docs/protocol.md, Agent profiles: a JWT in both modes, of the agent itself or of an admin (a scoped token needs the admin action for another agent). Each field given replaces the stored one; at least one is needed. description 0..1000 characters; at most 20 skills, each {id (1..64, unique), name (1..100), description? (0..500, default ""), tags? (at most 10 of 1..32 characters, default [])}. Audit agent-updated.',
      params: AgentIdParams, body: UpdateAgentInput,
      success: { 200: { schema: AgentSchema, description: 'The agent as it now is' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.agents.update(request.principal, request.params.id, request.body));

  // Disabling and enabling agents (docs/protocol.md, Disabled agents).
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/disable', { schema: agentState('disableAgent', 'Disable an agent (admin in strict mode)') },
    async (request) => ctx.agents.disable(request.principal, request.params.id));
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/enable', { schema: agentState('enableAgent', 'Enable an agent again (admin in strict mode)') },
    async (request) => ctx.agents.enable(request.principal, request.params.id));
}
