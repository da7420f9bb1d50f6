import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { AcquireLeaseInput, LeaseListQuery, LeaseListSchema, LeaseParams, LeaseSchema, RenewLeaseInput, RoomIdParams } from '@agent-messaging/protocol';
import { describe, SECURITY } from '../openapi.js';

/** Leases on resources in a room (docs/leases.md). */
export function leasesRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Params: { id: string } }>('/api/v1/rooms/:id/leases', {
    schema: describe({
      operationId: 'acquireLease', summary: 'Take a lease on a resource ("I am changing this")', tags: ['leases'], security: SECURITY.jwt,
      description: 'For a member of the room (`messages:write`). `resource` 1..512 characters (no NUL, no ".." segment), `exclusive` (true), `ttlSeconds` 5..86400 (3600), `reason` 0..200 characters. '
        + 'Two resources overlap when equal, or when one ends with "/" and the other starts with it. A lease overlapping a live lease of another agent where either is exclusive: 409 `details.conflicts` (those leases), nothing granted; '
        + 'exactly one of concurrent conflicting requests wins, on any nodes. `fence` grows with every lease granted in the room. A `clientLeaseId` repeat by the same holder while the lease lives answers 200 with it. '
        + 'Errors: 400 (`details.resource`, `details.ttlSeconds`, `details.reason`, `details.exclusive`), 403 not a member, 404 unknown room, 409.',
      params: RoomIdParams, body: AcquireLeaseInput,
      success: { 201: { schema: LeaseSchema, description: 'The lease, granted' }, 200: { schema: LeaseSchema, description: 'The live lease granted before with this clientLeaseId' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request, reply) => {
    const { lease, created } = await ctx.leases.acquire(request.principal, request.params.id, request.body);
    return reply.status(created ? 201 : 200).send(lease);
  });

  app.get<{ Params: { id: string }; Querystring: { resource?: string } }>('/api/v1/rooms/:id/leases', {
    schema: describe({
      operationId: 'listLeases', summary: 'The live leases of a room', tags: ['leases'], security: SECURITY.jwt,
      description: 'For members: the live leases, oldest first; with `resource`, those overlapping it.',
      params: RoomIdParams, querystring: LeaseListQuery,
      success: { 200: { schema: LeaseListSchema, description: 'The live leases' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ({ leases: await ctx.leases.list(request.principal, request.params.id, request.query) }));

  app.post<{ Params: { id: string; leaseId: string } }>('/api/v1/rooms/:id/leases/:leaseId/renew', {
    schema: describe({
      operationId: 'renewLease', summary: 'Renew a lease', tags: ['leases'], security: SECURITY.jwt,
      description: 'For its holder: `expiresAt` becomes now + `ttlSeconds` (5..86400, default 3600). An expired or released lease is gone: 404.',
      params: LeaseParams, body: RenewLeaseInput,
      success: { 200: { schema: LeaseSchema, description: 'The lease, renewed' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.leases.renew(request.principal, request.params.id, request.params.leaseId, request.body ?? {}));

  app.delete<{ Params: { id: string; leaseId: string } }>('/api/v1/rooms/:id/leases/:leaseId', {
    schema: describe({
      operationId: 'releaseLease', summary: 'Release a lease', tags: ['leases'], security: SECURITY.jwt,
      description: 'For its holder, or an admin. An expired or released lease is gone: 404.',
      params: LeaseParams,
      success: { 204: { schema: null, description: 'Released' } },
      errors: [401, 403, 404],
    }),
  }, async (request, reply) => {
    await ctx.leases.release(request.principal, request.params.id, request.params.leaseId);
    return reply.status(204).send();
  });
}
