import { sql, type CompiledQuery, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import { prepared } from '../../store/prepared.js';
import type { Dialect } from '../../store/database-handle.js';
import type { DB, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../store/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../store/values.js';
import { toMessage } from '../messages/messages.store.js';
import type { Message } from '../messages/message.js';
import type { WebhookEvent, WebhookMode } from '@agent-messaging/protocol';

type Db = Kysely<DB> | Transaction<DB>;

/** A registered endpoint as the API shows it (no secret). */
export interface Webhook {
  id: string;
  agentId: string;
  url: string;
  events: WebhookEvent[];
  mode: WebhookMode;
  createdAt: string;
  disabledAt: string | null;
}

export interface WebhookDelivery {
  id: string;
  event: WebhookEvent;
  messageId: string;
  attempt: number;
  status: 'pending' | 'delivered' | 'failed';
  error: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface NewEndpoint extends Webhook {
  secret: string;
  rooms: readonly string[] | null;
}

const toWebhook = (row: Selectable<WebhookEndpointsTable>): Webhook => ({
  id: row.id,
  agentId: row.agent_id,
  url: row.url,
  events: fromJson(row.events) as WebhookEvent[],
  mode: row.mode,
  createdAt: toIso(row.created_at),
  disabledAt: toIsoOrNull(row.disabled_at),
});

const toDelivery = (row: Selectable<WebhookDeliveriesTable>): WebhookDelivery => ({
  id: row.id,
  event: row.event as WebhookEvent,
  messageId: row.message_id,
  attempt: Number(row.attempt),
  status: row.status,
  error: row.error,
  createdAt: toIso(row.created_at),
  deliveredAt: toIsoOrNull(row.delivered_at),
});

export async function insertEndpoint(db: Db, e: NewEndpoint): Promise<void> {
  await db.insertInto('webhook_endpoints').values({
    id: e.id,
    agent_id: e.agentId,
    url: e.url,
    events: JSON.stringify(e.events),
    mode: e.mode,
    secret: e.secret,
    rooms: e.rooms === null ? null : JSON.stringify(e.rooms),
    created_at: e.createdAt,
    disabled_at: e.disabledAt,
  }).execute();
}

export async function countEndpoints(db: Db, agentId: string): Promise<number> {
  const row = await db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number | string>().as('n')).where('agent_id', '=', agentId).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function listEndpoints(db: Db, agentId: string): Promise<Webhook[]> {
  const rows = await db.selectFrom('webhook_endpoints').selectAll().where('agent_id', '=', agentId).orderBy('id').execute();
  return rows.map(toWebhook);
}

export async function findEndpoint(db: Db, agentId: string, id: string): Promise<Webhook | null> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('agent_id', '=', agentId).where('id', '=', id).executeTakeFirst();
  return row ? toWebhook(row) : null;
}

/** Deletes the endpoint and its deliveries; false when it did not exist. */
export async function deleteEndpoint(db: Kysely<DB>, agentId: string, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (!(await findEndpoint(trx, agentId, id))) return false;
    await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
    await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
    return true;
  });
}

export async function listDeliveries(db: Db, endpointId: string, limit: number): Promise<WebhookDelivery[]> {
  const rows = await db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('id', 'desc').limit(limit).execute();
  return rows.map(toDelivery);
}

/** An active endpoint of an active agent who is a member of `roomId` (one row per room and endpoint). */
export interface OutboxCandidate {
  endpointId: string;
  agentId: string;
  roomId: string;
  mode: WebhookMode;
  events: WebhookEvent[];
  rooms: string[] | null;
}

/**
 * The endpoints whose agents are members of these rooms: one compiled-once query per group commit,
 * the room ids as one parameter (a JSON array on SQLite, an array on PostgreSQL), so that a send
 * pays no query building for webhooks. Its cost follows the batch's members (an index probe each),
 * not the number of endpoints in the deployment; without endpoints it finds nothing.
 */
const candidatesQuery = (roomsIn: (rooms: unknown) => RawBuilder<boolean>) =>
  prepared((db, p: { rooms: unknown }) =>
    db
      .selectFrom('room_members as m')
      // A cross join keeps SQLite's planner in this order: the rooms' members, then their endpoints.
      .crossJoin('webhook_endpoints as e')
      .innerJoin('agents as a', 'a.id', 'e.agent_id')
      .select(['e.id', 'e.agent_id', 'e.mode', 'e.events', 'e.rooms', 'm.room_id'])
      .where(roomsIn(p.rooms))
      .whereRef('e.agent_id', '=', 'm.agent_id')
      .where('e.disabled_at', 'is', null)
      .where('a.disabled_at', 'is', null));
const candidatesOnSqlite = candidatesQuery((rooms) => sql<boolean>`m.room_id in (select value from json_each(${rooms}))`);
const candidatesOnPostgres = candidatesQuery((rooms) => sql<boolean>`m.room_id = any(${rooms}::uuid[])`);

const anyActiveEndpointQuery = prepared((db, _p: Record<string, never>) =>
  db.selectFrom('webhook_endpoints').select('id').where('disabled_at', 'is', null).limit(1));

/** Whether any endpoint is active (its agent may be disabled): the outbox's "none at all" check. */
export async function anyActiveEndpoint(db: Db): Promise<boolean> {
  return (await anyActiveEndpointQuery(db, {})).rows.length > 0;
}

export async function endpointsInRooms(db: Db, dialect: Dialect, roomIds: readonly string[]): Promise<OutboxCandidate[]> {
  const { rows } = dialect === 'sqlite' ? await candidatesOnSqlite(db, { rooms: JSON.stringify(roomIds) }) : await candidatesOnPostgres(db, { rooms: roomIds });
  return rows.map((r) => ({
    endpointId: r.id,
    agentId: r.agent_id,
    roomId: r.room_id,
    mode: r.mode,
    events: fromJson(r.events) as WebhookEvent[],
    rooms: r.rooms === null ? null : (fromJson(r.rooms) as string[]),
  }));
}

export interface NewDelivery {
  id: string;
  endpointId: string;
  messageId: string;
  event: WebhookEvent;
  createdAt: string;
}

/** The statement that inserts `deliveries` (at least one), for the group commit of their messages. */
export function insertDeliveriesStatement(db: Db, deliveries: readonly NewDelivery[]): CompiledQuery {
  return db.insertInto('webhook_deliveries').values(deliveries.map((d) => ({
    id: d.id,
    endpoint_id: d.endpointId,
    message_id: d.messageId,
    event: d.event,
    status: 'pending' as const,
    next_attempt_at: d.createdAt,
    error: null,
    created_at: d.createdAt,
    delivered_at: null,
  }))).compile();
}

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  attempt: number;
  createdAt: string;
  endpointId: string;
  url: string;
  secret: string;
  rooms: string[] | null;
  /** Why it must not be sent (endpoint or agent disabled), null when it may. */
  blocked: string | null;
  message: Message;
}

const anyDueQuery = prepared((db, p: { now: string }) =>
  db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'pending').where('next_attempt_at', '<=', p.now).limit(1));

/**
 * Claims up to `limit` due deliveries by moving their next attempt to `leaseUntil`: until then no
 * other claim (this node's or another's) sees them. On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets
 * nodes that claim at the same moment take different rows instead of waiting on each other; SQLite
 * has one writer at a time.
 */
export async function claimDue(db: Kysely<DB>, dialect: Dialect, now: string, leaseUntil: string, limit: number): Promise<ClaimedDelivery[]> {
  // Looked for first without a transaction (on SQLite a read on the read connection): a claim
  // transaction takes the write lock, and every group commit of messages would wait behind it,
  // once a second, even when nothing is due (the usual case).
  if ((await anyDueQuery(db, { now })).rows.length === 0) return [];
  return db.transaction().execute(async (trx) => {
    let due = trx.selectFrom('webhook_deliveries').select('id').where('status', '=', 'pending').where('next_attempt_at', '<=', now).orderBy('next_attempt_at').limit(limit);
    if (dialect === 'postgres') due = due.forUpdate().skipLocked();
    const ids = (await due.execute()).map((r) => r.id);
    if (ids.length === 0) return [];
    await trx.updateTable('webhook_deliveries').set({ next_attempt_at: leaseUntil }).where('id', 'in', ids).execute();
    const rows = await trx
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .innerJoin('agents as a', 'a.id', 'e.agent_id')
      .innerJoin('messages as m', 'm.id', 'd.message_id')
      .selectAll('m')
      .select([
        'd.id as delivery_id', 'd.attempt', 'd.created_at as delivery_created_at', 'e.id as endpoint_id', 'e.url', 'e.secret', 'e.rooms',
        'e.disabled_at as endpoint_disabled_at', 'a.disabled_at as agent_disabled_at',
      ])
      .where('d.id', 'in', ids)
      .execute();
    return rows.map((r) => ({
      id: r.delivery_id,
      attempt: Number(r.attempt),
      createdAt: toIso(r.delivery_created_at),
      endpointId: r.endpoint_id,
      url: r.url,
      secret: r.secret,
      rooms: r.rooms === null ? null : (fromJson(r.rooms) as string[]),
      blocked: r.agent_disabled_at !== null ? 'agent is disabled' : r.endpoint_disabled_at !== null ? 'endpoint is disabled' : null,
      message: toMessage(r),
    }));
  });
}

export type AttemptOutcome =
  | { status: 'delivered'; at: string }
  | { status: 'pending'; error: string; nextAttemptAt: string }
  | { status: 'failed'; error: string };

/**
 * Records one attempt (attempts made: `attempt + 1`). Only if the delivery is still as claimed:
 * should a lease have run out and another node attempted it meanwhile, that node's result stands.
 */
export async function recordAttempt(db: Db, id: string, attempt: number, outcome: AttemptOutcome): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      attempt: attempt + 1,
      status: outcome.status,
      error: outcome.status === 'delivered' ? null : outcome.error,
      delivered_at: outcome.status === 'delivered' ? outcome.at : null,
      ...(outcome.status === 'pending' ? { next_attempt_at: outcome.nextAttemptAt } : {}),
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('attempt', '=', attempt)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Gives claimed deliveries back (shutdown): due again at once, no attempt counted. */
export async function releaseClaims(db: Db, ids: readonly string[], now: string): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('webhook_deliveries').set({ next_attempt_at: now }).where('id', 'in', ids).where('status', '=', 'pending').execute();
}

/** Disables the endpoint when its last `count` deliveries all failed; true when it did now. */
export async function disableIfFailing(db: Db, endpointId: string, count: number, now: string): Promise<boolean> {
  const recent = await db.selectFrom('webhook_deliveries').select('status').where('endpoint_id', '=', endpointId).orderBy('id', 'desc').limit(count).execute();
  if (recent.length < count || recent.some((r) => r.status !== 'failed')) return false;
  const result = await db.updateTable('webhook_endpoints').set({ disabled_at: now }).where('id', '=', endpointId).where('disabled_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
