import { Readable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { authenticateAgentIdHeader } from '../../core/auth/authenticate.js';
import type { Principal } from '../../core/principal.js';
import {
  AddMemberInput, CreateRoomHeaders, SetActivityInput, OpenDirectRoomInput, CreateRoomInput, MemberParams,
  MembershipSchema, MarkReadInput, RoomMembersSchema, ReadCursorSchema, RoomIdParams, RoomList, RoomListPage, RoomSchema, UpdateRoomInput, ExportQuerySchema,
} from '@agent-messaging/protocol';
import { describe, SECURITY } from '../openapi.js';

/**
 * `POST /rooms` authenticates with the temporary `X-Agent-Id` header (open mode) or an admin JWT.
 * An X-Agent-Id that is not the UUID of an existing, active agent is 401.
 */
async function roomCreator(request: FastifyRequest, ctx: AppContext): Promise<Principal | null> {
  const header = request.headers['x-agent-id'];
  if (header === undefined || ctx.authz.mode === 'strict') return request.principal;
  return authenticateAgentIdHeader(ctx.agents, (Array.isArray(header) ? header[0] : header) ?? '');
}

/** The export's body in OpenAPI: text in either of its media types. */
const exportBody = {
  description: 'The room, streamed',
  content: {
    'application/x-ndjson': { schema: { type: 'string', description: 'First line {"room": Room}, then one Message (REST representation, tombstones included) per line in seq order' } },
    'text/markdown': { schema: { type: 'string', description: 'A transcript: time, sender\'s name, body, files by name; replies indented under their thread' } },
  },
} as unknown as TSchema;

const EXPORT_TYPES = { ndjson: 'application/x-ndjson; charset=utf-8', markdown: 'text/markdown; charset=utf-8' } as const;
const EXPORT_EXTENSIONS = { ndjson: 'ndjson', markdown: 'md' } as const;

export function roomsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.patch<{ Params: { id: string } }>('/api/v1/rooms/:id', {
    schema: describe({
      operationId: 'updateRoom', summary: 'Set a group room\'s retention and legal hold (admins)', tags: ['rooms'], security: SECURITY.jwt,
      description: 'retentionDays: whole days 1..36500, or null for the service\'s RETENTION_DAYS (unset: kept for ever); the retention sweep deletes older messages for good. '
        + 'legalHold: true stops the sweep for the room. Either or both. An admin\'s JWT (a scoped token needs admin); a direct room is 400 to its members, 404 to anyone else. Audited as room-updated (docs/retention.md).',
      params: RoomIdParams, body: UpdateRoomInput,
      success: { 200: { schema: RoomSchema, description: 'The room as it is now' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.rooms.update(request.principal, request.params.id, request.body));

  app.get<{ Params: { id: string }; Querystring: { format?: string } }>('/api/v1/rooms/:id/export', {
    schema: describe({
      operationId: 'exportRoom', summary: 'Download a room\'s messages as NDJSON or a Markdown transcript (streamed)', tags: ['rooms'], security: SECURITY.jwt,
      description: 'An admin (group rooms), or a member; a direct room only its members (404 to anyone else). Needs messages:read. '
        + 'The room up to its lastSeq when the export began, in seq order, streamed page by page (memory bounded); Content-Disposition: attachment. Audited as room-exported (docs/retention.md).',
      params: RoomIdParams, querystring: ExportQuerySchema,
      success: { 200: { schema: exportBody, description: 'The room, streamed' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    const { room, format, chunks } = await ctx.retention.exportRoom(request.principal, request.params.id, request.query.format);
    void reply.header('content-type', EXPORT_TYPES[format]);
    void reply.header('content-disposition', `attachment; filename="${room.slug}.${EXPORT_EXTENSIONS[format]}"`);
    void reply.header('x-content-type-options', 'nosniff');
    // Pulled a page at a time as the client reads: a slow reader holds the database reads back, a
    // client that goes away ends the generator (its reads stop).
    return reply.send(Readable.from(chunks, { objectMode: false, highWaterMark: 64 * 1024 }));
  });

  app.post('/rooms', {
    schema: describe({
      operationId: 'createRoom', summary: 'Create a room (admin); the creator becomes a member', tags: ['rooms'], security: SECURITY.roomCreator,
      headers: CreateRoomHeaders, body: CreateRoomInput,
      success: { 201: { schema: RoomSchema, description: 'The created room' } },
      errors: [401, 403, 409],
    }),
  }, async (request, reply) => {
    const room = await ctx.rooms.create(await roomCreator(request, ctx), request.body);
    return reply.status(201).send(room);
  });

  app.post('/api/v1/direct-rooms', {
    schema: describe({
      operationId: 'openDirectRoom',
      summary: 'Open the direct room of the caller and another agent: created the first time either side asks, the same room afterwards',
      description: 'A direct room is a private room of exactly two agents (kind "direct", slug dm-<room id>, named by the two agent names sorted and joined by ", "). '
        + 'Only its two members see, read or write it, admins included: to anyone else it is an unknown room (404). Its members never change '
        + '(POST /rooms/:id/members and DELETE /rooms/:roomId/members/:agentId give 409 to its members, 404 to anyone else). '
        + 'Errors: 400 when agentId is not a UUID or is the caller, 404 unknown agent, 403 when the other agent is disabled or the token lacks messages:write.',
      tags: ['rooms'], security: SECURITY.jwt,
      body: OpenDirectRoomInput,
      success: {
        201: { schema: RoomSchema, description: 'The direct room, just created' },
        200: { schema: RoomSchema, description: 'The direct room, opened before (by either side)' },
      },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    const { room, created } = await ctx.rooms.openDirect(request.principal, request.body);
    return reply.status(created ? 201 : 200).send(room);
  });

  app.get('/rooms', {
    schema: describe({
      operationId: 'listRoomsUnversioned', summary: 'List rooms (strict mode: a JWT, and an agent sees its own rooms)', tags: ['rooms'], security: SECURITY.jwtWhenStrict,
      success: { 200: { schema: RoomList, description: 'Rooms' } },
      errors: [401],
    }),
  }, async (request) => ctx.rooms.list(request.principal));

  // With a JWT, the caller's member rooms carry readSeq and unreadCount (docs/catch-up.md).
  app.get('/api/v1/rooms', {
    schema: describe({
      operationId: 'listRooms', summary: 'List rooms (strict mode: a JWT, and an agent sees its own rooms)', tags: ['rooms'], security: SECURITY.jwtWhenStrict,
      success: { 200: { schema: RoomListPage, description: 'Rooms; with a JWT, member rooms carry readSeq and unreadCount' } },
      errors: [401],
    }),
  }, async (request) => ({ rooms: await ctx.readCursors.list(request.principal) }));

  app.post<{ Params: { id: string } }>('/api/v1/rooms/:id/read', {
    schema: describe({
      operationId: 'markRead', summary: "Move the caller's read cursor of a room forward (members only)", tags: ['rooms'], security: SECURITY.jwt,
      params: RoomIdParams, body: MarkReadInput,
      success: { 200: { schema: ReadCursorSchema, description: 'The read cursor and what is left unread' } },
      errors: [401, 403, 404],
    }),
  }, async (request) => ctx.readCursors.markRead(request.principal, request.params.id, request.body));

  app.get<{ Params: { id: string } }>('/api/v1/rooms/:id/members', {
    schema: describe({
      operationId: 'listMembers', summary: 'The members of a room and whether each is online (members only in strict mode)', tags: ['rooms'], security: SECURITY.jwt,
      params: RoomIdParams,
      success: { 200: { schema: RoomMembersSchema, description: 'The members, in the order they joined' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.activity.withActivity(request.params.id, await ctx.rooms.members(request.principal, request.params.id)));

  app.post<{ Params: { id: string } }>('/api/v1/rooms/:id/activity', {
    schema: describe({
      operationId: 'setActivity',
      summary: 'Show the room that the caller is typing, working (with a text) or idle (members only; not stored; at most one update per second reaches the room)',
      tags: ['rooms'], security: SECURITY.jwt,
      params: RoomIdParams, body: SetActivityInput,
      success: { 204: { schema: null, description: 'Set; the room\'s sockets get activity:update (docs/protocol.md, Activity)' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    await ctx.activity.set(request.principal, request.params.id, request.body);
    return reply.status(204).send();
  });

  app.post<{ Params: { id: string } }>('/rooms/:id/members', {
    schema: describe({
      operationId: 'addMember', summary: 'Add an agent to a room (admin in strict mode)', tags: ['rooms'], security: SECURITY.jwtWhenStrict,
      params: RoomIdParams, body: AddMemberInput,
      success: { 201: { schema: MembershipSchema, description: 'The membership' } },
      errors: [401, 403, 404, 409],
    }),
  }, async (request, reply) => {
    // A direct room's members cannot change: 409 to its members, 404 to anyone else.
    const membership = await ctx.rooms.addMember(request.principal, request.params.id, request.body);
    return reply.status(201).send(membership);
  });

  app.delete<{ Params: { roomId: string; agentId: string } }>('/rooms/:roomId/members/:agentId', {
    schema: describe({
      operationId: 'removeMember', summary: 'Remove an agent from a room (admin in strict mode)', tags: ['rooms'], security: SECURITY.jwtWhenStrict,
      params: MemberParams,
      success: { 204: { schema: null, description: 'Removed' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request, reply) => {
    await ctx.rooms.removeMember(request.principal, request.params.roomId, request.params.agentId);
    return reply.status(204).send();
  });
}
