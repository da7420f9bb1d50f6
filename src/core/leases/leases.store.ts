import { sql, type Selectable } from 'kysely';
import type { Db, LeasesTable } from '../../store/schema.js';
import { toIso } from '../../store/values.js';
import type { Lease } from './lease.js';

type LeaseRow = Selectable<LeasesTable>;

export const toLease = (row: LeaseRow): Lease => ({
  id: row.id,
  roomId: row.room_id,
  resource: row.resource,
  holderId: row.holder_id,
  exclusive: Number(row.exclusive) === 1,
  reason: row.reason,
  fence: Number(row.fence),
  expiresAt: toIso(row.expires_at),
  createdAt: toIso(row.created_at),
});

/**
 * The room's next fence, and the lock that serialises the room's grants: the upsert takes the row
 * lock of `lease_rooms` on PostgreSQL until the transaction ends (concurrent grants in the room, on
 * any nodes, wait for it and then see what it granted); SQLite has one writer. Rolled back with a
 * refused grant, so the fence grows only with granted leases.
 */
export async function nextFence(db: Db, roomId: string): Promise<number> {
  const row = await db.insertInto('lease_rooms').values({ room_id: roomId, fence: 1 })
    .onConflict((oc) => oc.column('room_id').doUpdateSet({ fence: sql<number>`lease_rooms.fence + 1` }))
    .returning('fence').executeTakeFirstOrThrow();
  return Number(row.fence);
}

/** `resource` overlaps the row's (lease.ts, overlaps): equal, or one ends with "/" and the other starts with it. */
const overlapping = (resource: string) => {
  // Typed, so that PostgreSQL picks length(text) for a parameter.
  const r = sql`cast(${resource} as text)`;
  return sql<boolean>`(resource = ${r}
    or (substr(resource, length(resource), 1) = '/' and substr(${r}, 1, length(resource)) = resource)
    or (substr(${r}, length(${r}), 1) = '/' and substr(resource, 1, length(${r})) = ${r}))`;
};

/** The room's live leases (overlapping `resource` when given), oldest first. */
export async function listLive(db: Db, roomId: string, now: string, resource?: string): Promise<Lease[]> {
  let query = db.selectFrom('leases').selectAll().where('room_id', '=', roomId).where('expires_at', '>', now);
  if (resource !== undefined) query = query.where(overlapping(resource));
  const rows = await query.orderBy('created_at').orderBy('id').execute();
  return rows.map(toLease);
}

/** Live leases of other holders that a new lease on `resource` would conflict with (either exclusive). */
export async function findConflicts(db: Db, p: { roomId: string; holderId: string; resource: string; exclusive: boolean; now: string }): Promise<Lease[]> {
  let query = db.selectFrom('leases').selectAll().where('room_id', '=', p.roomId).where('expires_at', '>', p.now).where('holder_id', '<>', p.holderId)
    .where(overlapping(p.resource));
  if (!p.exclusive) query = query.where('exclusive', '=', 1);
  const rows = await query.orderBy('created_at').orderBy('id').limit(50).execute();
  return rows.map(toLease);
}

/** The holder's lease with this clientLeaseId in the room, live or not yet swept. */
export async function findByClientLeaseId(db: Db, roomId: string, holderId: string, clientLeaseId: string): Promise<Lease | null> {
  const row = await db.selectFrom('leases').selectAll().where('room_id', '=', roomId).where('holder_id', '=', holderId).where('client_lease_id', '=', clientLeaseId).executeTakeFirst();
  return row ? toLease(row) : null;
}

export async function insertLease(db: Db, lease: Lease, clientLeaseId: string | null): Promise<void> {
  await db.insertInto('leases').values({
    id: lease.id, room_id: lease.roomId, resource: lease.resource, holder_id: lease.holderId, exclusive: lease.exclusive ? 1 : 0,
    reason: lease.reason, fence: lease.fence, client_lease_id: clientLeaseId, expires_at: lease.expiresAt, created_at: lease.createdAt,
  }).execute();
}

export async function findLease(db: Db, roomId: string, id: string): Promise<Lease | null> {
  const row = await db.selectFrom('leases').selectAll().where('room_id', '=', roomId).where('id', '=', id).executeTakeFirst();
  return row ? toLease(row) : null;
}

/** A live lease's new end, if `holderId` holds it; false otherwise (gone, expired, another's). */
export async function renewLease(db: Db, p: { roomId: string; id: string; holderId: string; now: string; expiresAt: string }): Promise<boolean> {
  const result = await db.updateTable('leases').set({ expires_at: p.expiresAt })
    .where('room_id', '=', p.roomId).where('id', '=', p.id).where('holder_id', '=', p.holderId).where('expires_at', '>', p.now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Deletes the lease if it is still there (and, with `liveAt`, still live then; with `expiredBy`,
 * expired by then): true for the one caller, on any node, whose delete removed it.
 */
export async function deleteLease(db: Db, id: string, when: { liveAt?: string; expiredBy?: string }): Promise<boolean> {
  let query = db.deleteFrom('leases').where('id', '=', id);
  if (when.liveAt !== undefined) query = query.where('expires_at', '>', when.liveAt);
  if (when.expiredBy !== undefined) query = query.where('expires_at', '<=', when.expiredBy);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Leases that ran out by `now`, oldest end first (the sweep). */
export async function listExpiredLeases(db: Db, now: string, limit: number): Promise<Lease[]> {
  const rows = await db.selectFrom('leases').selectAll().where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
  return rows.map(toLease);
}
