import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { agentsNotFound, conflict, forbidden, notFound, roomNotFound, validationError } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB, RoomKind } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { findAgentById, findExistingAgentIds } from '../agents/agents.store.js';
import { recordAudit } from '../audit/audit.store.js';
import { grantedRooms, hasAction, historyNeedsMembership, listsEveryRoom, nonMemberRefusal, opensDirectRoom, requireRoom, type Authz } from '../authz/authz.js';
import { actorTokenDetail } from '../auth/tokens.store.js';
import type { EventPublisher } from '../events.js';
import type { PresenceReader } from '../../presence/presence.js';
import type { Principal } from '../principal.js';
import { compile, isUuid, parseId, requireObject } from '../validation.js';
import type { MembershipCache } from './membership-cache.js';
import { startReadCursorAtLastSeq } from './read-cursors.store.js';
import { AddMemberInput, CreateRoomInput, ROOM_SLUG_PATTERN } from '@agent-messaging/protocol';
import { findLastSeqs,
  deleteMembership, directKey, findDirectRoom, findMembersAmong, findRoomById, findRoomIdBySlug, insertMemberships, insertRoom, isMember,
  listRoomIdsOfAgents, listRoomMembers, listRooms, listRoomsOfAgent, type Membership, type Room, type RoomMemberRow,
} from './rooms.store.js';

export interface RoomMember extends RoomMemberRow {
  /** Has a live WebSocket connection on any node (the directory's presence). */
  online: boolean;
}

const createRoomInput = compile(CreateRoomInput);
const addMemberInput = compile(AddMemberInput);
const ROOM_SLUG_RE = new RegExp(ROOM_SLUG_PATTERN);

export interface RoomsService {
  /**
   * `POST /api/v1/direct-rooms`, `dm:open`: the direct room of the caller and `input.agentId`,
   * created (`created: true`) the first time either side asks (docs/protocol.md, Direct rooms).
   */
  openDirect(principal: Principal | null, input: unknown): Promise<{ room: Room; created: boolean }>;
  /**
   * Reading a room (history, sync, members): in strict mode members only; in open mode any agent
   * for a group room, a direct room's members only. ROOM_NOT_FOUND for a direct room of others.
   */
  assertReadable(roomId: string, agentId: string): Promise<void>;
  create(principal: Principal | null, input: unknown): Promise<Room>;
  /** Open mode: all rooms. Strict: an agent's own rooms, all for an admin. Either within a token's rooms. */
  list(principal: Principal | null): Promise<Room[]>;
  /** The rooms an agent is a member of that its token reaches (room:list, the inbox's wait). */
  listForAgent(principal: Principal): Promise<Room[]>;
  /**
   * The rooms a new socket is subscribed to (`agent:hello-ack`): listForAgent's, none without
   * `messages:read` (their `message:new` is reading).
   */
  listForSocket(principal: Principal): Promise<Room[]>;
  /**
   * `listForSocket`'s room ids for many sockets at once (one query per call, not per socket): the
   * periodic position check compares them with each socket's subscriptions. In the principals' order.
   */
  roomIdsForSockets(principals: readonly Principal[]): Promise<string[][]>;
  /**
   * `room:join`: ROOM_NOT_FOUND / FORBIDDEN unless the room exists, the agent is a member and its
   * token grants `rooms:read` and the room. Resolves the room id to subscribe the socket to, or
   * null without `messages:read` (a subscribed socket receives `message:new`).
   */
  authorizeJoin(principal: Principal, roomId: unknown): Promise<string | null>;
  /** `room:leave`: the room id, once the token is known to grant `rooms:read`. */
  authorizeLeave(principal: Principal, roomId: unknown): string;
  addMember(principal: Principal | null, roomId: string, input: unknown): Promise<Membership>;
  removeMember(principal: Principal | null, roomId: string, agentId: string): Promise<void>;
  /** The members with whether each is online (a JWT; in strict mode members only, as history). */
  members(principal: Principal | null, roomId: string): Promise<{ members: RoomMember[] }>;
  /** Throws ROOM_NOT_FOUND unless the room exists (its `lastSeq` may be stale: see lastSeqs). */
  get(roomId: string): Promise<Room>;
  /** `{roomId: lastSeq}`, read now (agent:hello-ack). */
  lastSeqs(roomIds: readonly string[]): Promise<Record<string, number>>;
  /**
   * Throws ROOM_NOT_FOUND / FORBIDDEN unless the room exists and the agent is a member (a direct
   * room answers ROOM_NOT_FOUND to anyone else: it is private). Resolves to the room's kind (a send
   * needs it and would read the room again).
   */
  assertMember(roomId: string, agentId: string): Promise<RoomKind>;
  /** Those of `agentIds` that are not members of the room (a message's mentions), in their order. */
  nonMembers(roomId: string, agentIds: readonly string[]): Promise<string[]>;
  /**
   * A room named by its id or its slug (the command line, MCP tools), as its id: a UUID is returned
   * as it is (the service it is passed to checks it), a slug is looked up (ROOM_NOT_FOUND). Naming a
   * room reveals nothing more than its id would: the usual membership rules apply to what follows.
   */
  resolveId(ref: unknown, field: string): Promise<string>;
}

export interface RoomsServiceDeps {
  db: Kysely<DB>;
  authz: Authz;
  events: EventPublisher;
  /**
   * Answers membership checks from memory (see membership-cache.ts); removals reach it, on every
   * node, through the `membership.removed` event (cluster/event-bridge.ts).
   */
  membershipCache?: MembershipCache | null;
  /** Who is online, for the member list. */
  presence: PresenceReader;
}

export function createRoomsService(deps: RoomsServiceDeps): RoomsService {
  const { db, authz, events, presence } = deps;
  const cache = deps.membershipCache ?? null;

  // A room, once created, is never changed or deleted: one seen in the database exists for good,
  // on every node. A bounded cache spares the lookup every message and history page starts with.
  const knownRooms = new Map<string, Room>();
  const KNOWN_ROOMS_MAX = 10_000;
  const getRoomOr404 = async (roomId: string): Promise<Room> => {
    const known = knownRooms.get(roomId);
    if (known) return { ...known };
    const room = await findRoomById(db, roomId);
    if (!room) throw roomNotFound();
    if (knownRooms.size >= KNOWN_ROOMS_MAX) knownRooms.delete(knownRooms.keys().next().value as string);
    knownRooms.set(roomId, { ...room });
    return room;
  };

  const assertMember = async (rawRoomId: string, agentId: string): Promise<RoomKind> => {
    const roomId = parseId(rawRoomId, 'roomId');
    // Every message sent asks: a known room costs no lookup, copy or await.
    const { kind } = knownRooms.get(roomId) ?? await getRoomOr404(roomId);
    // With several nodes the cache answers only while other nodes' removals reach it (membership-cache.ts).
    if (cache?.has(roomId, agentId)) return kind;
    const since = cache?.begin() ?? 0;
    if (!(await isMember(db, roomId, agentId))) throw nonMemberRefusal(kind);
    cache?.remember(since, roomId, agentId);
    return kind;
  };

  const assertReadable = async (roomId: string, agentId: string): Promise<void> => {
    if (await historyNeedsMembership(authz.historyNeedsMembership, async () => (await getRoomOr404(roomId)).kind)) await assertMember(roomId, agentId);
  };

  /**
   * A direct room's membership never changes: 409 to one of its members, 404 to anyone else (it is
   * private), before strict mode's admin rule; a JWT is still needed first in strict mode.
   */
  const refuseDirectMemberChange = async (principal: Principal | null, roomId: string): Promise<void> => {
    authz.requireAgentWhenStrict(principal);
    const room = await getRoomOr404(roomId);
    if (room.kind !== 'direct') return;
    if (principal !== null && (await isMember(db, roomId, principal.agentId))) throw conflict('The members of a direct room cannot change');
    throw roomNotFound();
  };

  const directInput = compile(AddMemberInput);

  const nonMembers = async (roomId: string, agentIds: readonly string[]): Promise<string[]> => {
    const unknown = agentIds.filter((id) => !cache?.has(roomId, id));
    if (unknown.length === 0) return [];
    const since = cache?.begin() ?? 0;
    const members = await findMembersAmong(db, roomId, unknown);
    for (const id of members) cache?.remember(since, roomId, id);
    return unknown.filter((id) => !members.has(id));
  };

  return {
    async openDirect(principal, input) {
      const caller = authz.requireAgent(principal, 'messages:write');
      const { agentId: rawAgentId } = directInput.parse(requireObject(input));
      const agentId = rawAgentId.toLowerCase();
      if (agentId === caller.agentId) throw validationError({ agentId: 'must not be the caller: a direct room is with another agent' });
      const other = await findAgentById(db, agentId);
      if (!other) throw agentsNotFound([agentId]);
      if (other.disabledAt !== null) throw forbidden('Agent is disabled');
      const key = directKey(caller.agentId, agentId);
      const existing = await findDirectRoom(db, key);
      if (!opensDirectRoom(caller, existing?.id ?? null)) {
        throw forbidden('This token is limited to rooms: it cannot open a direct room outside them');
      }
      if (existing) return { room: existing, created: false };
      const self = await findAgentById(db, caller.agentId);
      if (!self) throw notFound('Agent');
      const id = uuidv7();
      const name = [self.name, other.name].sort().join(', ');
      const room: Room = { id, slug: `dm-${id}`, name, kind: 'direct', createdBy: caller.agentId, createdAt: nowIso(), lastSeq: 0 };
      const agentIds = [caller.agentId, agentId];
      try {
        await db.transaction().execute(async (trx) => {
          await insertRoom(trx, room, key);
          await insertMemberships(trx, agentIds.map((a) => ({ roomId: id, agentId: a, joinedAt: room.createdAt })));
          await recordAudit(trx, { event: 'room-created', actorId: caller.agentId, subjectId: id, detail: { slug: room.slug, kind: 'direct', members: 2 } });
        });
      } catch (err) {
        // The other side (or a retry, on any node) opened it first: its room is the one.
        if (!isUniqueViolation(err)) throw err;
        const winner = await findDirectRoom(db, key);
        if (!winner) throw err;
        return { room: winner, created: false };
      }
      await events.publish({ type: 'membership.added', roomId: id, agentIds });
      return { room, created: true };
    },

    assertReadable: (roomId, agentId) => assertReadable(parseId(roomId, 'roomId'), agentId),

    async create(principal, input) {
      const creator = authz.requireAdmin(principal);
      const { slug, name, members = [] } = createRoomInput.parse(requireObject(input));
      const wanted = [...new Set([creator.agentId, ...members.map((m) => m.toLowerCase())])];
      const existing = await findExistingAgentIds(db, wanted);
      const unknown = wanted.filter((id) => !existing.has(id));
      if (unknown.length > 0) throw validationError({ members: `unknown agent id(s): ${unknown.join(', ')}` });

      const room: Room = { id: uuidv7(), slug, name, kind: 'group', createdBy: creator.agentId, createdAt: nowIso(), lastSeq: 0 };
      const memberships = wanted.map((agentId) => ({ roomId: room.id, agentId, joinedAt: room.createdAt }));
      try {
        await db.transaction().execute(async (trx) => {
          await insertRoom(trx, room);
          await insertMemberships(trx, memberships);
          await recordAudit(trx, { event: 'room-created', actorId: creator.agentId, subjectId: room.id, detail: { slug, members: wanted.length } });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`Room slug "${slug}" already exists`);
        throw err;
      }
      // One change set: every member's sockets, on every node, in one event.
      await events.publish({ type: 'membership.added', roomId: room.id, agentIds: wanted });
      return room;
    },

    async list(principal) {
      const caller = authz.requireAgentWhenStrict(principal);
      if (caller === null) return listRooms(db, null);
      authz.requireAgent(caller, 'rooms:read');
      if (!listsEveryRoom(authz.mode, caller)) return grantedRooms(caller, await listRoomsOfAgent(db, caller.agentId));
      return grantedRooms(caller, await listRooms(db, caller.agentId));
    },

    listForAgent: async (principal) => grantedRooms(principal, await listRoomsOfAgent(db, principal.agentId)),

    listForSocket: async (principal) =>
      hasAction(principal, 'messages:read') ? grantedRooms(principal, await listRoomsOfAgent(db, principal.agentId)) : [],

    async roomIdsForSockets(principals) {
      const reading = principals.filter((p) => hasAction(p, 'messages:read'));
      const byAgent = await listRoomIdsOfAgents(db, reading.map((p) => p.agentId));
      return principals.map((p) => {
        if (!hasAction(p, 'messages:read')) return [];
        const ids = byAgent.get(p.agentId) ?? [];
        return grantedRooms(p, ids.map((id) => ({ id }))).map((room) => room.id);
      });
    },

    async authorizeJoin(principal, rawRoomId) {
      authz.requireAgent(principal, 'rooms:read');
      const roomId = parseId(rawRoomId, 'roomId');
      await assertMember(roomId, principal.agentId);
      requireRoom(principal, roomId);
      return hasAction(principal, 'messages:read') ? roomId : null;
    },

    authorizeLeave(principal, rawRoomId) {
      authz.requireAgent(principal, 'rooms:read');
      return parseId(rawRoomId, 'roomId');
    },

    get: (roomId) => getRoomOr404(parseId(roomId, 'roomId')),

    lastSeqs: (roomIds) => findLastSeqs(db, roomIds),

    async addMember(principal, rawRoomId, input) {
      const roomId = parseId(rawRoomId, 'id');
      await refuseDirectMemberChange(principal, roomId);
      authz.requireAdminWhenStrict(principal);
      const { agentId: rawAgentId } = addMemberInput.parse(requireObject(input));
      const agentId = rawAgentId.toLowerCase();
      await getRoomOr404(roomId);
      // A token limited to some rooms changes the members of those rooms only (docs/scopes.md).
      if (principal !== null) requireRoom(principal, roomId);
      if (!(await findAgentById(db, agentId))) throw notFound('Agent');
      const actor = await actorTokenDetail(db, principal);
      const membership: Membership = { roomId, agentId, joinedAt: nowIso() };
      try {
        await db.transaction().execute(async (trx) => {
          await insertMemberships(trx, [membership]);
          // Old history is not unread for a new member (docs/catch-up.md).
          await startReadCursorAtLastSeq(trx, roomId, agentId);
          await recordAudit(trx, { event: 'member-added', actorId: principal?.agentId ?? null, subjectId: roomId, detail: { agentId, ...actor } });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('Agent is already a member of this room');
        throw err;
      }
      await events.publish({ type: 'membership.added', roomId, agentIds: [agentId] });
      return membership;
    },

    async removeMember(principal, rawRoomId, rawAgentId) {
      const roomId = parseId(rawRoomId, 'roomId');
      const agent = parseId(rawAgentId, 'agentId');
      await refuseDirectMemberChange(principal, roomId);
      authz.requireAdminWhenStrict(principal);
      await getRoomOr404(roomId);
      if (principal !== null) requireRoom(principal, roomId);
      if (!(await findAgentById(db, agent))) throw notFound('Agent');
      const actor = await actorTokenDetail(db, principal);
      const removed = await db.transaction().execute(async (trx) => {
        const deleted = await deleteMembership(trx, roomId, agent);
        if (deleted) await recordAudit(trx, { event: 'member-removed', actorId: principal?.agentId ?? null, subjectId: roomId, detail: { agentId: agent, ...actor } });
        return deleted;
      });
      if (!removed) throw notFound('Membership');
      // Every node forgets the cached membership and the agent's sockets leave the room before this
      // answers, so no node delivers this room to the agent afterwards (cluster/event-bridge.ts).
      await events.publish({ type: 'membership.removed', roomId, agentIds: [agent] });
    },

    async members(principal, rawRoomId) {
      const reader = authz.requireAgent(principal, 'rooms:read');
      const roomId = parseId(rawRoomId, 'id');
      await assertReadable(roomId, reader.agentId);
      requireRoom(reader, roomId);
      const rows = await listRoomMembers(db, roomId);
      const online = await presence.onlineAgents(rows.map((m) => m.agentId));
      return { members: rows.map((m) => ({ ...m, online: online.has(m.agentId) })) };
    },

    async resolveId(ref, field) {
      if (isUuid(ref)) return ref.toLowerCase();
      if (typeof ref !== 'string' || !ROOM_SLUG_RE.test(ref)) throw validationError({ [field]: 'must be a room id (UUID) or slug' });
      const id = await findRoomIdBySlug(db, ref);
      if (id === null) throw roomNotFound();
      return id;
    },

    assertMember,
    nonMembers,
  };
}
