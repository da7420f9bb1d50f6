import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { AcquireLeaseInput, LEASE_TTL_SECONDS, type LeaseState } from '@agent-messaging/protocol';
import { AppError, forbidden, notFound, validationError } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { auditStatement } from '../audit/audit.store.js';
import { requireRoom, type Authz } from '../authz/authz.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { compile, parseId, requireObject } from '../validation.js';
import { resourceProblem, type Lease } from './lease.js';
import {
  deleteLease, findByClientLeaseId, findConflicts, findLease, insertLease, listExpiredLeases, listLive, nextFence, renewLease,
} from './leases.store.js';

export interface AcquireResult {
  lease: Lease;
  /** False when a clientLeaseId repeat answered the live lease. */
  created: boolean;
}

/** Leases on resources (docs/leases.md): every transport calls these. */
export interface LeasesService {
  acquire(principal: Principal | null, roomId: unknown, input: unknown): Promise<AcquireResult>;
  list(principal: Principal | null, roomId: unknown, query: { resource?: unknown }): Promise<Lease[]>;
  renew(principal: Principal | null, roomId: unknown, leaseId: unknown, input: unknown): Promise<Lease>;
  release(principal: Principal | null, roomId: unknown, leaseId: unknown): Promise<void>;
  /** Deletes and announces the leases that ran out (the sweep): each once, whichever node deletes it. */
  expire(): Promise<number>;
  startExpiry(onError: (err: unknown) => void): void;
  stopExpiry(): Promise<void>;
}

const acquireInput = compile(AcquireLeaseInput);

/** Leases end within this of their expiresAt (docs/leases.md promises 2 s). */
const EXPIRY_INTERVAL_MS = 500;
const EXPIRY_BATCH = 200;

const secondsFrom = (at: string, seconds: number): string => new Date(new Date(at).getTime() + seconds * 1000).toISOString();

/** A lease grant refused: the live leases in its way. */
const conflictWith = (conflicts: Lease[]): AppError =>
  new AppError('CONFLICT', 'The resource is leased by another agent', { conflicts });

export function createLeasesService(deps: {
  db: Kysely<DB>; authz: Authz; rooms: RoomsService; events: EventPublisher;
  /** TEST ONLY (AMS_TEST_MIN_LEASE_SECONDS): the shortest ttl accepted; 5 otherwise. */
  minTtlSeconds?: number;
}): LeasesService {
  const { db, authz, rooms, events } = deps;
  const minTtl = Math.min(deps.minTtlSeconds ?? LEASE_TTL_SECONDS.min, LEASE_TTL_SECONDS.min);

  /** Seconds `minTtl`..86400 (the schema says 5..: the test knob may lower the floor), `fallback` when absent. */
  const parseTtl = (raw: unknown): number => {
    if (raw === undefined || raw === null) return LEASE_TTL_SECONDS.default;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < minTtl || raw > LEASE_TTL_SECONDS.max) {
      throw validationError({ ttlSeconds: `must be a whole number of seconds from ${LEASE_TTL_SECONDS.min} to ${LEASE_TTL_SECONDS.max}` });
    }
    return raw;
  };

  const announce = async (lease: Lease, state: LeaseState, alsoTo?: string): Promise<void> => {
    await events.publish({ type: 'lease.updated', lease, state, ...(alsoTo === undefined ? {} : { alsoTo }) });
  };

  /** The caller, a member of the room (404 unknown room, 403 not a member), with the token's scope and rooms. */
  const member = async (principal: Principal | null, rawRoomId: unknown, scope: 'messages:read' | 'messages:write'): Promise<{ actor: Principal; roomId: string }> => {
    const actor = authz.requireAgent(principal, scope);
    const roomId = parseId(rawRoomId, 'roomId');
    await rooms.assertMember(roomId, actor.agentId);
    requireRoom(actor, roomId);
    return { actor, roomId };
  };

  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> = Promise.resolve();

  const service: LeasesService = {
    async acquire(principal, rawRoomId, input) {
      const body = requireObject(input);
      const { ttlSeconds, ...rest } = body;
      const fields = acquireInput.parse(rest);
      const ttl = parseTtl(ttlSeconds);
      const problem = resourceProblem(fields.resource);
      if (problem !== null) throw validationError({ resource: problem });
      const { actor, roomId } = await member(principal, rawRoomId, 'messages:write');
      const holderId = actor.agentId;
      const clientLeaseId = fields.clientLeaseId ?? null;
      const exclusive = fields.exclusive ?? true;
      const expired: Lease[] = [];
      let repeat: Lease | null = null;
      let granted: Lease | null = null;
      try {
        granted = await db.transaction().execute(async (trx) => {
          // First: the room's lock (and its next fence), so that what follows sees every grant before it.
          const fence = await nextFence(trx, roomId);
          const now = nowIso();
          if (clientLeaseId !== null) {
            const earlier = await findByClientLeaseId(trx, roomId, holderId, clientLeaseId);
            if (earlier !== null && earlier.expiresAt > now) {
              repeat = earlier;
              return null;
            }
            // Run out but not swept yet: gone now, announced as expired below (it was not before).
            if (earlier !== null && (await deleteLease(trx, earlier.id, { expiredBy: now }))) expired.push(earlier);
          }
          const conflicts = await findConflicts(trx, { roomId, holderId, resource: fields.resource, exclusive, now });
          if (conflicts.length > 0) throw conflictWith(conflicts);
          const lease: Lease = {
            id: uuidv7(), roomId, resource: fields.resource, holderId, exclusive, reason: fields.reason ?? '', fence,
            expiresAt: secondsFrom(now, ttl), createdAt: now,
          };
          await insertLease(trx, lease, clientLeaseId);
          await trx.executeQuery(auditStatement(trx, { event: 'lease-granted', actorId: holderId, subjectId: lease.id, detail: { roomId, resource: lease.resource, exclusive, fence } }));
          return lease;
        });
      } catch (err) {
        // The nothing-granted answer of a refused grant; a clientLeaseId raced by the same holder finds the winner.
        if (clientLeaseId !== null && isUniqueViolation(err)) {
          const winner = await findByClientLeaseId(db, roomId, holderId, clientLeaseId);
          if (winner !== null) return { lease: winner, created: false };
        }
        throw err;
      }
      for (const lease of expired) await announce(lease, 'expired');
      if (repeat !== null) return { lease: repeat, created: false };
      await announce(granted!, 'granted');
      return { lease: granted!, created: true };
    },

    async list(principal, rawRoomId, query) {
      const { roomId } = await member(principal, rawRoomId, 'messages:read');
      const resource = query.resource;
      if (resource !== undefined && resource !== null && resource !== '' && (typeof resource !== 'string' || resource.length > 512)) {
        throw validationError({ resource: 'must be a resource name of at most 512 characters' });
      }
      return listLive(db, roomId, nowIso(), typeof resource === 'string' && resource !== '' ? resource : undefined);
    },

    async renew(principal, rawRoomId, rawLeaseId, input) {
      const { ttlSeconds } = requireObject(input ?? {});
      const ttl = parseTtl(ttlSeconds);
      // Both ids checked before any lookup (a malformed one is 400, never a 404).
      parseId(rawRoomId, 'roomId');
      const leaseId = parseId(rawLeaseId, 'leaseId');
      const { actor, roomId } = await member(principal, rawRoomId, 'messages:write');
      const now = nowIso();
      const lease = await findLease(db, roomId, leaseId);
      if (lease === null || lease.expiresAt <= now) throw notFound('Lease');
      if (lease.holderId !== actor.agentId) throw forbidden('Only the holder may renew a lease');
      const expiresAt = secondsFrom(now, ttl);
      if (!(await renewLease(db, { roomId, id: leaseId, holderId: actor.agentId, now, expiresAt }))) throw notFound('Lease');
      const renewed = { ...lease, expiresAt };
      await announce(renewed, 'renewed');
      return renewed;
    },

    async release(principal, rawRoomId, rawLeaseId) {
      const actor = authz.requireAgent(principal, 'messages:write');
      const roomId = parseId(rawRoomId, 'roomId');
      const leaseId = parseId(rawLeaseId, 'leaseId');
      // An admin releases any lease (a member or not); anyone else, as a member, their own.
      if (actor.role !== 'admin') await rooms.assertMember(roomId, actor.agentId);
      requireRoom(actor, roomId);
      const now = nowIso();
      const lease = await findLease(db, roomId, leaseId);
      if (lease === null || lease.expiresAt <= now) throw notFound('Lease');
      if (lease.holderId !== actor.agentId && actor.role !== 'admin') throw forbidden('Only the holder (or an admin) may release a lease');
      const released = await db.transaction().execute(async (trx) => {
        if (!(await deleteLease(trx, leaseId, { liveAt: now }))) return false;
        await trx.executeQuery(auditStatement(trx, { event: 'lease-released', actorId: actor.agentId, subjectId: leaseId, detail: { roomId, resource: lease.resource, holderId: lease.holderId } }));
        return true;
      });
      if (!released) throw notFound('Lease');
      await announce(lease, 'released', lease.holderId === actor.agentId ? undefined : lease.holderId);
    },

    async expire() {
      const now = nowIso();
      let count = 0;
      for (const lease of await listExpiredLeases(db, now, EXPIRY_BATCH)) {
        if (!(await deleteLease(db, lease.id, { expiredBy: now }))) continue; // another node's sweep, or a release, came first
        await announce(lease, 'expired');
        count++;
      }
      return count;
    },

    startExpiry(onError) {
      if (sweepTimer !== undefined) return;
      let busy = false;
      sweepTimer = setInterval(() => {
        if (busy) return;
        busy = true;
        sweeping = service.expire().catch(onError).finally(() => {
          busy = false;
        });
      }, EXPIRY_INTERVAL_MS);
      sweepTimer.unref();
    },

    async stopExpiry() {
      clearInterval(sweepTimer);
      sweepTimer = undefined;
      await sweeping;
    },
  };
  return service;
}
