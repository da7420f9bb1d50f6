import { IdString, Timestamp } from './common.schema.js';
import { Text, Type, Uuid } from './text.js';

/** Leases on resources (docs/leases.md): "I am changing this" for a while, in a room. */
export const LEASE_RESOURCE_MAX = 512;
export const LEASE_REASON_MAX = 200;
export const LEASE_TTL_SECONDS = { min: 5, max: 86_400, default: 3600 };
export const LEASE_STATES = ['granted', 'renewed', 'released', 'expired'] as const;
export type LeaseState = (typeof LEASE_STATES)[number];

export const LeaseSchema = Type.Object(
  {
    id: IdString(),
    roomId: IdString(),
    resource: Type.String({ description: 'What is being changed: a path-like name; one ending with "/" covers everything under it' }),
    holderId: IdString('The agent holding it'),
    exclusive: Type.Boolean({ description: 'False: shared (only exclusive leases conflict with it)' }),
    reason: Type.String({ description: 'Why, 0..200 characters' }),
    fence: Type.Integer({ description: 'Grows with every lease granted in the room: a fencing number' }),
    expiresAt: Timestamp(),
    createdAt: Timestamp(),
  },
  { title: 'Lease' },
);

/** `POST /api/v1/rooms/:id/leases`. */
export const AcquireLeaseInput = Type.Object(
  {
    resource: Text({ minLength: 1, maxLength: LEASE_RESOURCE_MAX, description: '1..512 characters, no NUL, no ".." path segment' }),
    exclusive: Type.Optional(Type.Boolean({ description: 'Default true' })),
    ttlSeconds: Type.Optional(Type.Integer({ minimum: LEASE_TTL_SECONDS.min, maximum: LEASE_TTL_SECONDS.max, description: '5..86400, default 3600' })),
    reason: Type.Optional(Text({ maxLength: LEASE_REASON_MAX })),
    clientLeaseId: Type.Optional(Text({ minLength: 1, maxLength: 64, description: 'Your own id: a repeat while the lease lives answers 200 with it' })),
  },
  { additionalProperties: true, title: 'AcquireLeaseInput' },
);

/** `POST /api/v1/rooms/:id/leases/:leaseId/renew`. */
export const RenewLeaseInput = Type.Object(
  { ttlSeconds: Type.Optional(Type.Integer({ minimum: LEASE_TTL_SECONDS.min, maximum: LEASE_TTL_SECONDS.max, description: '5..86400, default 3600' })) },
  { additionalProperties: true, title: 'RenewLeaseInput' },
);

export const LeaseListSchema = Type.Object({ leases: Type.Array(LeaseSchema, { description: 'The live leases, oldest first' }) }, { title: 'LeaseList' });
export const LeaseListQuery = Type.Object({ resource: Type.Optional(Type.String({ description: 'Only the leases overlapping this resource' })) });
export const LeaseParams = Type.Object({ id: Uuid({ description: 'Room id' }), leaseId: Uuid({ description: 'Lease id' }) });

/** `lease:updated`: a lease of one of the agent's rooms was granted, renewed, released or expired. */
export const LeaseUpdatedSchema = Type.Object(
  { lease: LeaseSchema, state: Type.Union(LEASE_STATES.map((s) => Type.Literal(s)), { description: 'granted, renewed, released or expired' }) },
  { title: 'LeaseUpdated' },
);
