import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { AGENT_DISABLED } from '../../core/auth/sessions.service.js';
import type { Principal } from '../../core/principal.js';
import { isUuid } from '../../core/validation.js';
import { unauthenticated } from '../../errors.js';

/**
 * `POST /rooms` authenticates with the temporary `X-Agent-Id` header (open mode) or an admin JWT.
 * An X-Agent-Id that is not the UUID of an existing, active agent is 401.
 */
async function roomCreator(request: FastifyRequest, ctx: AppContext): Promise<Principal | null> {
  const header = request.headers['x-agent-id'];
  if (header === undefined || ctx.authz.mode === 'strict') return request.principal;
  const value = Array.isArray(header) ? header[0] : header;
  if (!isUuid(value)) throw unauthenticated('X-Agent-Id must name an existing agent');
  const agent = await ctx.agents.get(value.toLowerCase());
  if (!agent) throw unauthenticated('X-Agent-Id must name an existing agent');
  if (agent.disabledAt !== null) throw unauthenticated(AGENT_DISABLED);
  return { agentId: agent.id, role: agent.role };
}

export function roomsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/rooms', async (request, reply) => {
    const room = await ctx.rooms.create(await roomCreator(request, ctx), request.body);
    return reply.status(201).send(room);
  });

  app.get('/rooms', async (request) => ctx.rooms.list(request.principal));

  // With a JWT, the caller's member rooms carry readSeq and unreadCount (PHASE2.md 1.3).
  app.get('/api/v1/rooms', async (request) => ({ rooms: await ctx.readCursors.list(request.principal) }));

  app.post<{ Params: { id: string } }>('/api/v1/rooms/:id/read', async (request) =>
    ctx.readCursors.markRead(request.principal, request.params.id, request.body));

  app.post<{ Params: { id: string } }>('/rooms/:id/members', async (request, reply) => {
    const membership = await ctx.rooms.addMember(request.principal, request.params.id, request.body);
    return reply.status(201).send(membership);
  });

  app.delete<{ Params: { roomId: string; agentId: string } }>('/rooms/:roomId/members/:agentId', async (request, reply) => {
    await ctx.rooms.removeMember(request.principal, request.params.roomId, request.params.agentId);
    return reply.status(204).send();
  });
}
