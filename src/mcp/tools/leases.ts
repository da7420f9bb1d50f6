import { LEASE_REASON_MAX, LEASE_RESOURCE_MAX, LEASE_TTL_SECONDS } from '@agent-messaging/protocol';
import type { Lease } from '../../core/leases/lease.js';
import { Type } from '../../core/validation.js';
import { args, defineTool, ROOM } from './define.js';

/** Leases on resources in a room (docs/leases.md; REST: leases.routes.ts). */

const LEASE_ID = Type.String({ minLength: 1, maxLength: 64, description: 'The id (a UUID) of a lease, as acquire_lease or list_leases show it.' });
const TTL = Type.Integer({ description: `Seconds the lease lasts (${LEASE_TTL_SECONDS.min} to ${LEASE_TTL_SECONDS.max}, default ${LEASE_TTL_SECONDS.default}).` });

const renderLease = (l: Lease): string =>
  `Lease ${l.id} on "${l.resource}" (${l.exclusive ? 'exclusive' : 'shared'}) held by ${l.holderId} until ${l.expiresAt}, fence ${l.fence}${l.reason === '' ? '' : `: ${l.reason}`}.`;

export const LEASE_TOOLS = {
  acquire_lease: defineTool({
    title: 'Take a lease on a resource before changing it',
    description: 'Says "I am changing this" in a room, for ttlSeconds: members see it, and an overlapping lease of another agent is refused while it lives. '
      + 'Resources are path-like names; one ending with "/" covers everything under it ("src/" overlaps "src/app.ts"). Shared leases (exclusive false) conflict only with exclusive ones. '
      + 'CONFLICT names the leases in the way. Keep the fence: a system you write to can refuse writers with an older one. Release it (release_lease) when done.',
    input: args({
      room: ROOM,
      resource: Type.String({ minLength: 1, maxLength: LEASE_RESOURCE_MAX, description: `What you change (1 to ${LEASE_RESOURCE_MAX} characters, no ".." segment).` }),
      exclusive: Type.Optional(Type.Boolean({ description: 'true (default) or false for a shared lease.' })),
      ttlSeconds: Type.Optional(TTL),
      reason: Type.Optional(Type.String({ maxLength: LEASE_REASON_MAX, description: 'Why, for the others (up to 200 characters).' })),
      clientLeaseId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Your own id for this lease, for safe retries.' })),
    }),
    readOnly: false,
    async run({ room, ...input }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const { lease, created } = await ctx.leases.acquire(principal, roomId, input);
      return { data: { lease }, text: `${created ? 'Granted' : 'Already granted with this clientLeaseId'}: ${renderLease(lease)}` };
    },
  }),

  renew_lease: defineTool({
    title: 'Renew a lease',
    description: 'Extends a lease you hold to now + ttlSeconds. NOT_FOUND when it already ran out or was released.',
    input: args({ room: ROOM, leaseId: LEASE_ID, ttlSeconds: Type.Optional(TTL) }),
    readOnly: false,
    async run({ room, leaseId, ttlSeconds }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const lease = await ctx.leases.renew(principal, roomId, leaseId, ttlSeconds === undefined ? {} : { ttlSeconds });
      return { data: { lease }, text: `Renewed: ${renderLease(lease)}` };
    },
  }),

  release_lease: defineTool({
    title: 'Release a lease',
    description: 'Ends a lease you hold (an admin: any lease), so that others may take the resource.',
    input: args({ room: ROOM, leaseId: LEASE_ID }),
    readOnly: false,
    async run({ room, leaseId }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      await ctx.leases.release(principal, roomId, leaseId);
      return { data: { released: leaseId }, text: `Released lease ${leaseId}.` };
    },
  }),

  list_leases: defineTool({
    title: 'List the leases of a room',
    description: 'The live leases of a room (who changes what, until when), oldest first; with resource, only those overlapping it.',
    input: args({ room: ROOM, resource: Type.Optional(Type.String({ minLength: 1, maxLength: LEASE_RESOURCE_MAX, description: 'Only the leases overlapping this resource.' })) }),
    readOnly: true,
    async run({ room, resource }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const leases = await ctx.leases.list(principal, roomId, resource === undefined ? {} : { resource });
      return { data: { leases }, text: leases.length === 0 ? 'No leases.' : leases.map(renderLease).join('\n') };
    },
  }),
};
