import type { CompiledQuery, Kysely, Selectable, Transaction } from 'kysely';
import { prepared } from '../../store/prepared.js';
import { dialectOf } from '../../store/dialect.js';
import type { DB, Db, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../store/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../store/values.js';
import { withAttachments } from '../messages/attachments.store.js';
import { toMessage } from '../messages/messages.store.js';
import type { Message } from '../messages/message.js';
import type { WebhookEvent, WebhookMode } from '@agent-messaging/protocol';

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

/** An endpoint with the room restriction it was registered with (null: every room). */
export interface StoredWebhook extends Webhook {
  rooms: string[] | null;
}

const toWebhook = (row: Selectable<WebhookEndpointsTable>): StoredWebhook => ({
  id: row.id,
  agentId: row.agent_id,
  url: row.url,
  events: fromJson(row.events) as WebhookEvent[],
  mode: row.mode,
  createdAt: toIso(row.created_at),
  disabledAt: toIsoOrNull(row.disabled_at),
  rooms: row.rooms === null ? null : (fromJson(row.rooms) as string[]),
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

export async function listEndpoints(db: Db, agentId: string): Promise<StoredWebhook[]> {
  const rows = await db.selectFrom('webhook_endpoints').selectAll().where('agent_id', '=', agentId).orderBy('id').execute();
  return rows.map(toWebhook);
}

export async function findEndpoint(db: Db, agentId: string, id: string): Promise<StoredWebhook | null> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('agent_id', '=', agentId).where('id', '=', id).executeTakeFirst();
  return row ? toWebhook(row) : null;
}

/**
 * Deletes the endpoint and its deliveries; false when it does not exist or `visible` refuses it.
 * Run it in the caller's transaction, with the audit record of the deletion.
 */
export async function deleteEndpoint(trx: Transaction<DB>, agentId: string, id: string, visible: (w: StoredWebhook) => boolean = () => true): Promise<boolean> {
  const endpoint = await findEndpoint(trx, agentId, id);
  if (!endpoint || !visible(endpoint)) return false;
  await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
  await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
  return true;
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
 * the room ids as one parameter (store/dialect.ts), so that a send pays no query building for
 * webhooks. Its cost follows the batch's members (an index probe each),
 * not the number of endpoints in the deployment; without endpoints it finds nothing.
 */
const candidatesQuery = prepared((db, p: { rooms: unknown }) =>
  db
    .selectFrom('room_members as m')
    // A cross join keeps SQLite's planner in this order: the rooms' members, then their endpoints.
    .crossJoin('webhook_endpoints as e')
    .innerJoin('agents as a', 'a.id', 'e.agent_id')
    .select(['e.id', 'e.agent_id', 'e.mode', 'e.events', 'e.rooms', 'm.room_id'])
    .where(dialectOf(db).inIdList('m.room_id', p.rooms))
    .whereRef('e.agent_id', '=', 'm.agent_id')
    .where('e.disabled_at', 'is', null)
    .where('a.disabled_at', 'is', null));

const anyActiveEndpointQuery = prepared((db, _p: Record<string, never>) =>
  db.selectFrom('webhook_endpoints').select('id').where('disabled_at', 'is', null).limit(1));

/** Whether any endpoint is active (its agent may be disabled): the outbox's "none at all" check. */
export async function anyActiveEndpoint(db: Db): Promise<boolean> {
  return (await anyActiveEndpointQuery(db, {})).rows.length > 0;
}

export async function endpointsInRooms(db: Db, roomIds: readonly string[]): Promise<OutboxCandidate[]> {
  const { rows } = await candidatesQuery(db, { rooms: dialectOf(db).idList(roomIds) });
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
  /** The delivery's `data` as JSON, when it is not the message (`message.acked`). */
  payload?: string;
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
    payload: d.payload ?? null,
  }))).compile();
}

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  attempt: number;
  createdAt: string;
  endpointId: string;
  agentId: string;
  url: string;
  secret: string;
  rooms: string[] | null;
  /** Why it must not be sent (endpoint or agent disabled), null when it may. */
  blocked: string | null;
  /** message.created, .attention, .updated or .deleted. */
  event: WebhookEvent;
  message: Message;
  /** The `data` of a delivery that is not the message (`message.acked`); null for the others. */
  payload: unknown;
}

/**
 * Endpoints looked at per claim: those due longest come first, the others at the next claim. Large
 * enough that every endpoint with due deliveries is seen (a healthy endpoint's new delivery is due
 * last, behind every dead endpoint's backlog), bounded so that a claim never reads without limit.
 */
const DUE_ENDPOINTS_MAX = 10_000;

/**
 * The endpoints with due deliveries, those due longest first, at most DUE_ENDPOINTS_MAX. Each
 * endpoint's earliest pending delivery is one probe of the index `(endpoint_id, next_attempt_at)
 * where status = 'pending'`: the cost follows the number of endpoints, never the backlog of
 * deliveries (a scan of every due row would, at every claim).
 */
const dueEndpointsQuery = prepared((db, p: { now: string }) =>
  db
    .selectFrom((qb) => qb
      .selectFrom('webhook_endpoints as e')
      .select((eb) => [
        'e.id as endpoint_id',
        'e.agent_id',
        eb.selectFrom('webhook_deliveries as d').select((d) => d.fn.min('d.next_attempt_at').as('m'))
          .whereRef('d.endpoint_id', '=', 'e.id').where('d.status', '=', 'pending').as('due'),
      ])
      .as('x'))
    .select(['x.endpoint_id', 'x.agent_id'])
    .where('x.due', '<=', p.now)
    .orderBy('x.due')
    .limit(DUE_ENDPOINTS_MAX));

/** How the claiming node shares its free slots among endpoints (all unbounded when not given). */
export interface ClaimPlan {
  /** Attempts of this endpoint in flight on this node now. */
  inFlight(endpointId: string): number;
  /** Attempts of this agent's endpoints in flight on this node now. */
  agentInFlight(agentId: string): number;
  /** Attempts of this endpoint this node may have in flight at once (0: none now, e.g. in back-off). */
  bound(endpointId: string): number;
  /**
   * `trusted`: its last attempt got an answer in time; `untrusted`: its last attempt timed out or
   * one is waiting for its answer; `new`: neither known on this node.
   */
  trust(endpointId: string): Trust;
  /** Endpoints with due deliveries that got no slot because their bound is 0. */
  skipped?(endpointIds: string[]): void;
}

export type Trust = 'trusted' | 'new' | 'untrusted';

/** Free slots: in all; of those at most `unproven` for new and untrusted endpoints, and `untrusted` for untrusted ones. */
export interface FreeSlots {
  total: number;
  unproven: number;
  untrusted: number;
}

const UNBOUNDED: ClaimPlan = { inFlight: () => 0, agentInFlight: () => 0, bound: () => Number.POSITIVE_INFINITY, trust: () => 'trusted' };

/** A due endpoint: its agent, and how many it has due (unknown: infinite). */
export interface DueEndpoint {
  endpointId: string;
  agentId: string;
  count: number;
}

/**
 * Shares free slots among the endpoints with due deliveries, one at a time: to the agent with the
 * fewest attempts in flight, then its endpoint with the fewest, then the one due longest.
 * Untrusted endpoints get at most `slots.untrusted` of them, new and untrusted ones together at
 * most `slots.unproven`. So an agent whose endpoints hang, however many, cannot take the slots
 * another agent's next delivery needs, nor can an endpoint with a backlog.
 */
export function shareSlots(due: readonly DueEndpoint[], slots: FreeSlots, plan: ClaimPlan): Map<string, number> {
  const open = due
    .map((d, order) => ({
      endpointId: d.endpointId, agentId: d.agentId, order, trust: plan.trust(d.endpointId),
      level: plan.inFlight(d.endpointId), left: Math.min(d.count, plan.bound(d.endpointId) - plan.inFlight(d.endpointId)),
    }))
    .filter((e) => e.left > 0);
  const agents = new Map<string, number>();
  const agentLevel = (agentId: string): number => {
    let level = agents.get(agentId);
    if (level === undefined) agents.set(agentId, (level = plan.agentInFlight(agentId)));
    return level;
  };
  const shares = new Map<string, number>();
  const left = { unproven: slots.unproven, untrusted: slots.untrusted };
  for (let given = 0; given < slots.total; given++) {
    let best = -1;
    for (let i = 0; i < open.length; i++) {
      const a = open[i]!;
      if (a.trust !== 'trusted' && (left.unproven <= 0 || (a.trust === 'untrusted' && left.untrusted <= 0))) continue;
      if (best < 0) {
        best = i;
        continue;
      }
      const b = open[best]!;
      const [la, lb] = [agentLevel(a.agentId), agentLevel(b.agentId)];
      if (la < lb || (la === lb && (a.level < b.level || (a.level === b.level && a.order < b.order)))) best = i;
    }
    if (best < 0) break;
    const e = open[best]!;
    shares.set(e.endpointId, (shares.get(e.endpointId) ?? 0) + 1);
    agents.set(e.agentId, agentLevel(e.agentId) + 1);
    if (e.trust !== 'trusted') left.unproven -= 1;
    if (e.trust === 'untrusted') left.untrusted -= 1;
    e.level += 1;
    e.left -= 1;
    if (e.left === 0) open.splice(best, 1);
  }
  return shares;
}

/**
 * Claims up to `slots` due deliveries by moving their next attempt to `leaseUntil`: until then no
 * other claim (this node's or another's) sees them. The slots are shared among endpoints
 * (`shareSlots`), then each endpoint's share is taken in its due order; on PostgreSQL with
 * `FOR UPDATE SKIP LOCKED`, so nodes that claim at the same moment take different rows instead of
 * waiting on each other (a node may then claim fewer than its share); SQLite has one writer at a time.
 */
export async function claimDue(db: Kysely<DB>, now: string, leaseUntil: string, slots: number | FreeSlots, plan: ClaimPlan = UNBOUNDED): Promise<ClaimedDelivery[]> {
  // Looked for first without a transaction (on SQLite a read on the read connection): a claim
  // transaction takes the write lock, and every group commit of messages would wait behind it,
  // once a second, even when nothing is due (the usual case).
  const { rows: dueRows } = await dueEndpointsQuery(db, { now });
  if (dueRows.length === 0) return [];
  // How many each has due is not counted (that would read them all): a share larger than an
  // endpoint's due deliveries claims fewer, and the worker claims again.
  const due = dueRows.map((r) => ({ endpointId: r.endpoint_id, agentId: r.agent_id, count: Number.POSITIVE_INFINITY }));
  const skipped = due.filter((d) => plan.bound(d.endpointId) === 0).map((d) => d.endpointId);
  if (skipped.length > 0) plan.skipped?.(skipped);
  const shares = shareSlots(due, typeof slots === 'number' ? { total: slots, unproven: slots, untrusted: slots } : slots, plan);
  if (shares.size === 0) return [];
  const claimed = await db.transaction().execute(async (trx) => {
    const ids: string[] = [];
    for (const [endpointId, share] of shares) {
      const query = trx.selectFrom('webhook_deliveries').select('id')
        .where('endpoint_id', '=', endpointId).where('status', '=', 'pending').where('next_attempt_at', '<=', now)
        .orderBy('next_attempt_at').limit(share);
      for (const row of await dialectOf(trx).forClaim(query).execute()) ids.push(row.id);
    }
    if (ids.length === 0) return [];
    await trx.updateTable('webhook_deliveries').set({ next_attempt_at: leaseUntil }).where('id', 'in', ids).execute();
    const rows = await trx
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .innerJoin('agents as a', 'a.id', 'e.agent_id')
      .innerJoin('messages as m', 'm.id', 'd.message_id')
      .selectAll('m')
      .select([
        'd.id as delivery_id', 'd.event as delivery_event', 'd.payload as delivery_payload', 'd.attempt', 'd.created_at as delivery_created_at', 'e.id as endpoint_id', 'e.agent_id', 'e.url', 'e.secret', 'e.rooms',
        'e.disabled_at as endpoint_disabled_at', 'a.disabled_at as agent_disabled_at',
      ])
      .where('d.id', 'in', ids)
      .execute();
    return rows.map((r) => ({
      id: r.delivery_id,
      attempt: Number(r.attempt),
      createdAt: toIso(r.delivery_created_at),
      endpointId: r.endpoint_id,
      agentId: r.agent_id,
      url: r.url,
      secret: r.secret,
      rooms: r.rooms === null ? null : (fromJson(r.rooms) as string[]),
      blocked: r.agent_disabled_at !== null ? 'agent is disabled' : r.endpoint_disabled_at !== null ? 'endpoint is disabled' : null,
      event: r.delivery_event as WebhookEvent,
      message: toMessage(r),
      payload: r.delivery_payload === null ? null : fromJson(r.delivery_payload),
    }));
  });
  // The messages' files, read after the claim's transaction (one query for all).
  await withAttachments(db, claimed.map((c) => c.message));
  return claimed;
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

/**
 * Moves the due (and sooner) pending deliveries of an endpoint in back-off to `until`, no attempt
 * counted: every node then leaves them until the back-off ends.
 */
export async function postponeEndpoint(db: Db, endpointId: string, until: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ next_attempt_at: until })
    .where('endpoint_id', '=', endpointId).where('status', '=', 'pending').where('next_attempt_at', '<', until).execute();
}

/** Disables the endpoint when its last `count` deliveries all failed; true when it did now. */
export async function disableIfFailing(db: Db, endpointId: string, count: number, now: string): Promise<boolean> {
  const recent = await db.selectFrom('webhook_deliveries').select('status').where('endpoint_id', '=', endpointId).orderBy('id', 'desc').limit(count).execute();
  if (recent.length < count || recent.some((r) => r.status !== 'failed')) return false;
  const result = await db.updateTable('webhook_endpoints').set({ disabled_at: now }).where('id', '=', endpointId).where('disabled_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
