import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { AgentList, AgentSchema, CreateAgentInput, AgentIdParams } from '@agent-messaging/protocol';
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

  // Disabling and enabling agents (docs/protocol.md, Disabled agents).
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/disable', { schema: agentState('disableAgent', 'Disable an agent (admin in strict mode)') },
    async (request) => ctx.agents.disable(request.principal, request.params.id));
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/enable', { schema: agentState('enableAgent', 'Enable an agent again (admin in strict mode)') },
    async (request) => ctx.agents.enable(request.principal, request.params.id));
}
