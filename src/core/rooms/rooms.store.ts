import type { Selectable } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { prepared } from '../../store/prepared.js';
import type { Db, RoomKind, RoomsTable } from '../../store/schema.js';
import { toIso } from '../../store/values.js';
import type { Role } from '../principal.js';

export type { RoomKind } from '../../store/schema.js';

export interface Room {
  id: string;
  slug: string;
  name: string;
  /** `direct`: a private conversation of exactly two agents (docs/protocol.md, Direct rooms). */
  kind: RoomKind;
  createdBy: string;
  createdAt: string;
  /** The room's latest message `seq` when it was read (0 without messages). */
  lastSeq: number;
}

export interface Membership {
  roomId: string;
  agentId: string;
  joinedAt: string;
}

/** A member of a room as `GET /api/v1/rooms/:id/members` lists it (before presence is added). */
export interface RoomMemberRow {
  agentId: string;
  name: string;
  displayName: string;
  role: Role;
  joinedAt: string;
}

const toRoom = (row: Selectable<RoomsTable>): Room => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  kind: row.kind,
  createdBy: row.created_by,
  createdAt: toIso(row.created_at),
  lastSeq: Number(row.last_seq),
});

/** `directKey`: a direct room's pair (directKey()), unique; omitted for a group room. */
export async function insertRoom(db: Db, room: Room, directKey: string | null = null): Promise<void> {
  await db
    .insertInto('rooms')
    .values({
      id: room.id, slug: room.slug, name: room.name, kind: room.kind, direct_key: directKey, created_by: room.createdBy, created_at: room.createdAt,
    })
    .execute();
}

/** The key of the direct room of two agents, the same whichever side asks. */
export const directKey = (a: string, b: string): string => (a < b ? `${a}:${b}` : `${b}:${a}`);

export async function findDirectRoom(db: Db, key: string): Promise<Room | null> {
  const row = await db.selectFrom('rooms').selectAll().where('direct_key', '=', key).executeTakeFirst();
  return row ? toRoom(row) : null;
}

export async function insertMemberships(db: Db, memberships: Membership[]): Promise<void> {
  if (memberships.length === 0) return;
  await db
    .insertInto('room_members')
    .values(memberships.map((m) => ({ room_id: m.roomId, agent_id: m.agentId, joined_at: m.joinedAt })))
    .execute();
}

export async function deleteMembership(db: Db, roomId: string, agentId: string): Promise<boolean> {
  const result = await db.deleteFrom('room_members').where('room_id', '=', roomId).where('agent_id', '=', agentId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

const roomByIdQuery = prepared((db, p: { id: string }) => db.selectFrom('rooms').selectAll().where('id', '=', p.id));
const isMemberQuery = prepared((db, p: { roomId: string; agentId: string }) =>
  db.selectFrom('room_members').select('agent_id').where('room_id', '=', p.roomId).where('agent_id', '=', p.agentId),
);

export async function findRoomById(db: Db, id: string): Promise<Room | null> {
  const [row] = (await roomByIdQuery(db, { id })).rows;
  return row ? toRoom(row) : null;
}

export async function findRoomIdBySlug(db: Db, slug: string): Promise<string | null> {
  const row = await db.selectFrom('rooms').select('id').where('slug', '=', slug).executeTakeFirst();
  return row ? row.id : null;
}

/**
 * Every group room, plus the direct rooms of `viewerId` (none when null): a direct room is seen by
 * its two members only, admins included.
 */
export async function listRooms(db: Db, viewerId: string | null): Promise<Room[]> {
  let select = db.selectFrom('rooms').selectAll();
  select = viewerId === null
    ? select.where('kind', '=', 'group')
    : select.where((eb) => eb.or([
      eb('kind', '=', 'group'),
      eb('id', 'in', eb.selectFrom('room_members').select('room_members.room_id').where('room_members.agent_id', '=', viewerId)),
    ]));
  return (await select.orderBy('id').execute()).map(toRoom);
}

/** agentId -> ids of the rooms it is a member of, for many agents in one query (the position check). */
export async function listRoomIdsOfAgents(db: Db, agentIds: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (agentIds.length === 0) return out;
  const rows = await db.selectFrom('room_members').select(['agent_id', 'room_id']).where('agent_id', 'in', [...new Set(agentIds)]).execute();
  for (const row of rows) {
    const list = out.get(row.agent_id);
    if (list) list.push(row.room_id);
    else out.set(row.agent_id, [row.room_id]);
  }
  return out;
}

// Every WebSocket handshake reads it: compiled once.
const roomsOfAgentQuery = prepared((db, p: { agentId: string }) =>
  db.selectFrom('rooms').innerJoin('room_members', 'room_members.room_id', 'rooms.id').selectAll('rooms').where('room_members.agent_id', '=', p.agentId).orderBy('rooms.id'));

export async function listRoomsOfAgent(db: Db, agentId: string): Promise<Room[]> {
  return (await roomsOfAgentQuery(db, { agentId })).rows.map(toRoom);
}

export async function isMember(db: Db, roomId: string, agentId: string): Promise<boolean> {
  return (await isMemberQuery(db, { roomId, agentId })).rows.length > 0;
}

/** The ids of a room's members (a direct room's two, for attention). */
export async function listMemberIds(db: Db, roomId: string): Promise<string[]> {
  return (await db.selectFrom('room_members').select('agent_id').where('room_id', '=', roomId).execute()).map((r) => r.agent_id);
}

/** Which of `agentIds` are members of the room (one query for a message's mentions). */
export async function findMembersAmong(db: Db, roomId: string, agentIds: readonly string[]): Promise<Set<string>> {
  if (agentIds.length === 0) return new Set();
  const rows = await db.selectFrom('room_members').select('agent_id').where('room_id', '=', roomId).where('agent_id', 'in', [...agentIds]).execute();
  return new Set(rows.map((r) => r.agent_id));
}

/** The members of a room with their agent's names, in the order they joined. */
export async function listRoomMembers(db: Db, roomId: string): Promise<RoomMemberRow[]> {
  const rows = await db
    .selectFrom('room_members')
    .innerJoin('agents', 'agents.id', 'room_members.agent_id')
    .select(['agents.id', 'agents.name', 'agents.display_name', 'agents.role', 'room_members.joined_at'])
    .where('room_members.room_id', '=', roomId)
    .orderBy('room_members.joined_at')
    .orderBy('agents.id')
    .execute();
  return rows.map((row) => ({ agentId: row.id, name: row.name, displayName: row.display_name, role: row.role, joinedAt: toIso(row.joined_at) }));
}

/*
 * A room's `last_seq`: the counter of its messages' sequence numbers (docs/catch-up.md), a column of
 * the room that the send path bumps (messages/seq.store.ts) and that handshakes, read cursors and
 * catch-up read.
 */
const lastSeqQuery = prepared((db, p: { roomId: string }) => db.selectFrom('rooms').select('last_seq').where('id', '=', p.roomId));
// The rooms as one parameter (dialect.ts): compiled once, whatever their number.
export const lastSeqsQuery = prepared((db, p: { rooms: unknown }) =>
  db.selectFrom('rooms').select(['id', 'last_seq']).where(dialectOf(db).inIdList('id', p.rooms)));

/** The room's latest `seq` (0 without messages); null when the room does not exist. */
export async function findLastSeq(db: Db, roomId: string): Promise<number | null> {
  const row = (await lastSeqQuery(db, { roomId })).rows[0];
  return row === undefined ? null : Number(row.last_seq);
}

/** `{roomId: lastSeq}` for the given rooms (those that exist); every handshake's hello-ack reads it. */
export async function findLastSeqs(db: Db, roomIds: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (roomIds.length === 0) return out;
  const { rows } = await lastSeqsQuery(db, { rooms: dialectOf(db).idList(roomIds) });
  for (const row of rows) out[row.id] = Number(row.last_seq);
  return out;
}
