import { Activity } from './activity.schema.js';
import { IdString, Nullable, RoleSchema, Timestamp } from './common.schema.js';
import { Type, Text, Uuid } from './text.js';

export const ROOM_SLUG_PATTERN = '^[a-z0-9-]{1,64}$';

/** The longest retention a room may set, in days (100 years). */
export const ROOM_RETENTION_DAYS_MAX = 36_500;

export const CreateRoomInput = Type.Object(
  {
    // The pattern bounds the length (64), so every bad slug gets the message naming the pattern.
    slug: Text({ pattern: ROOM_SLUG_PATTERN }),
    name: Text({ minLength: 1, maxLength: 128 }),
    members: Type.Optional(Type.Array(Uuid(), { maxItems: 1000 })),
  },
  { additionalProperties: true },
);

/** `POST /api/v1/direct-rooms` and `dm:open`. */
export const OpenDirectRoomInput = Type.Object({ agentId: Uuid({ description: 'The other agent' }) }, { additionalProperties: true });

export const AddMemberInput = Type.Object({ agentId: Uuid() }, { additionalProperties: true });

/** The Room object (docs/protocol.md, Rooms and members). */
export const RoomSchema = Type.Object(
  {
    id: IdString(),
    slug: Type.String({ pattern: ROOM_SLUG_PATTERN }),
    // A direct room's name is its two agents' names (64 each) joined by ", ".
    name: Type.String({ minLength: 1, maxLength: 130 }),
    kind: Type.Union([Type.Literal('group'), Type.Literal('direct')], { description: '"direct": a private room of exactly two agents (POST /api/v1/direct-rooms)' }),
    createdBy: IdString('The creating agent (of a direct room: the first to open it)'),
    createdAt: Timestamp(),
    lastSeq: Type.Integer({ minimum: 0, description: "The room's latest message seq (0 without messages)" }),
    readSeq: Type.Optional(Type.Integer({ minimum: 0, description: "The caller's read cursor (GET /api/v1/rooms with a JWT, member rooms)" })),
    unreadCount: Type.Optional(Type.Integer({ minimum: 0, description: 'Messages after readSeq sent by others' })),
    attentionCount: Type.Optional(Type.Integer({ minimum: 0, description: 'Of those, the messages for the caller\'s attention (mentions, direct rooms, replies to it)' })),
    retentionDays: Type.Union([Type.Integer({ minimum: 1, maximum: ROOM_RETENTION_DAYS_MAX }), Type.Null()], {
      description: 'Days its messages are kept before the retention sweep deletes them; null: the service\'s RETENTION_DAYS (unset: for ever)',
    }),
    legalHold: Type.Boolean({ description: 'While true the retention sweep deletes nothing in the room' }),
  },
  { title: 'Room' },
);

/** `PATCH /api/v1/rooms/:id` (admins, group rooms): retention and legal hold (docs/retention.md). */
export const UpdateRoomInput = Type.Object(
  {
    retentionDays: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: ROOM_RETENTION_DAYS_MAX }), Type.Null()], {
      description: 'Whole days, 1..36500; null: the service\'s RETENTION_DAYS',
    })),
    legalHold: Type.Optional(Type.Boolean({ description: 'true: the retention sweep leaves the room alone' })),
  },
  { additionalProperties: true },
);

/** `GET /api/v1/rooms/:id/export` (docs/retention.md, Export). */
export const ExportQuerySchema = Type.Object(
  { format: Type.Optional(Type.Union([Type.Literal('ndjson'), Type.Literal('markdown')], { description: 'ndjson (default) or markdown' })) },
  { additionalProperties: true },
);

/** `POST /api/v1/rooms/:id/read` and `room:read`. */
export const MarkReadInput = Type.Object({ seq: Type.Integer({ minimum: 0, description: 'The last seq processed; at most the room’s lastSeq' }) }, { additionalProperties: true });
export const ReadCursorSchema = Type.Object(
  { roomId: IdString(), readSeq: Type.Integer({ minimum: 0 }), unreadCount: Type.Integer({ minimum: 0 }) },
  { title: 'ReadCursor' },
);

export const RoomList = Type.Array(RoomSchema, { title: 'RoomList' });
export const RoomListPage = Type.Object({ rooms: RoomList }, { title: 'RoomListResponse' });

export const MembershipSchema = Type.Object(
  { roomId: IdString(), agentId: IdString(), joinedAt: Timestamp() },
  { title: 'Membership' },
);

/** `GET /api/v1/rooms/:id/members` (docs/protocol.md, Rooms and members). */
export const RoomMembersSchema = Type.Object(
  {
    members: Type.Array(Type.Object(
      {
        agentId: IdString(), name: Type.String(), displayName: Type.String(), role: RoleSchema, joinedAt: Timestamp(),
        online: Type.Boolean({ description: 'Has a live WebSocket connection (on any node)' }),
        activity: Nullable(Activity),
      },
      { title: 'RoomMember' },
    ), { description: 'In the order they joined' }),
  },
  { title: 'RoomMembers' },
);

export const RoomIdParams = Type.Object({ id: Uuid({ description: 'Room id' }) });
export const MemberParams = Type.Object({ roomId: Uuid({ description: 'Room id' }), agentId: Uuid({ description: 'Agent id' }) });
/** `POST /rooms` authenticates with X-Agent-Id (open mode) or an admin JWT. */
export const CreateRoomHeaders = Type.Object({
  'x-agent-id': Type.Optional(Uuid({ description: 'Open mode only: the id of the admin agent creating the room, in place of authentication' })),
});
