import { Type, type Static } from '@sinclair/typebox';
import { SetActivityInput, type ActivityUpdatePayload } from './activity.schema.js';
import { IdString } from './common.schema.js';
import { HistoryLimit, SendMessageInput, WsMessageSchema } from './messages.schema.js';
import { RoomSchema } from './rooms.schema.js';
import type { LeaseUpdatedSchema } from './leases.schema.js';
import { MoveTaskInput, TaskSchema } from './tasks.schema.js';
import { Text, Uuid } from './text.js';

/**
 * The wire protocol of the `/agents` Socket.IO namespace (docs/websocket.md): event names, payload
 * and acknowledgement shapes, and the error codes, shared by the server and its clients.
 */

/** Every WebSocket error code a client may see (the server's error catalog maps its codes onto these). */
export const WS_ERROR_CODES = [
  'VALIDATION_ERROR', 'AUTH_FAILED', 'FORBIDDEN', 'NOT_FOUND', 'ROOM_NOT_FOUND', 'CONFLICT', 'RATE_LIMIT_EXCEEDED', 'UNAVAILABLE', 'INTERNAL',
] as const;
export type WsErrorCode = (typeof WS_ERROR_CODES)[number];

export const NAMESPACE = '/agents';

/** Client-to-server events the namespace handles. Anything else is answered with VALIDATION_ERROR. */
export const CLIENT_EVENTS = ['room:join', 'room:leave', 'room:list', 'message:send', 'message:history', 'room:sync', 'room:read', 'message:thread', 'dm:open', 'activity:set', 'task:move'] as const;
export type ClientEventName = (typeof CLIENT_EVENTS)[number];

/**
 * What the server sends back to a client, in the acknowledgement (`{error: {code, message}}`) or as
 * an `error` event (`{code, message, requestId?}`): exactly the shapes of docs/protocol.md, nothing more.
 */
export interface WsError {
  code: WsErrorCode;
  /** Human-readable; for VALIDATION_ERROR it names each failing field. */
  message: string;
  /** Echoes the request's `requestId` on `error` events. */
  requestId?: string;
}

/** A message as WebSocket payloads carry it: the author is `authorAgentId` (REST says `senderId`). */
export type WsMessage = Static<typeof WsMessageSchema>;

/** A task as REST and `task:updated` carry it (docs/tasks.md). */
export type TaskObject = Static<typeof TaskSchema>;

/** `task:updated`: a task of which the agent is the requester or the assignee was created or moved. */
/** `lease:updated`: a lease of a room of the agent's (docs/leases.md). */
export type LeaseUpdated = Static<typeof LeaseUpdatedSchema>;

export interface TaskUpdated {
  task: TaskObject;
}

/**
 * `room:positions`: the current `lastSeq` of the socket's rooms, sent periodically when they differ
 * from what the socket was last told, and at once after the node's cluster bus or database was
 * interrupted (docs/catch-up.md). A room whose `lastSeq` is
 * above the last `seq` the client processed was missed: `room:sync` it.
 */
export interface RoomPositions {
  lastSeqs: Record<string, number>;
}

export const RoomAddedSchema = Type.Object({ room: RoomSchema }, { title: 'RoomAdded' });
export const RoomRemovedSchema = Type.Object({ roomId: IdString() }, { title: 'RoomRemoved' });

/** A Room as REST gives it (with `kind` and `lastSeq`). */
export type Room = Static<typeof RoomSchema>;

export interface PresenceUpdate {
  agentId: string;
  status: 'online' | 'offline';
}

export interface HelloAck {
  agentId: string;
  rooms: string[];
  /** `{roomId: lastSeq}` for every room in `rooms`, read after the socket joined them. */
  lastSeqs: Record<string, number>;
}

/** `message:updated`: a message of one of the connection's rooms was edited. */
export interface MessageUpdated {
  id: string;
  roomId: string;
  seq: number;
  body: string;
  editedAt: string;
  /** As the message carries them (an edit changes the body only). */
  data: WsMessage['data'];
  attachments: WsMessage['attachments'];
}

/** `message:deleted`: a message of one of the connection's rooms was deleted (it stays as a tombstone). */
export interface MessageDeleted {
  id: string;
  roomId: string;
  seq: number;
  deletedAt: string;
}

export interface ServerToClientEvents {
  'agent:hello-ack': (payload: HelloAck) => void;
  'room:positions': (payload: RoomPositions) => void;
  'message:updated': (payload: MessageUpdated) => void;
  'message:deleted': (payload: MessageDeleted) => void;
  'presence:update': (payload: PresenceUpdate) => void;
  'message:new': (payload: WsMessage) => void;
  /** The agent became a member of a room (docs/websocket.md): its sockets are already subscribed. */
  'room:added': (payload: { room: Room }) => void;
  /** The agent stopped being a member of a room: its sockets are already unsubscribed. */
  'room:removed': (payload: { roomId: string }) => void;
  /** A member's activity in a room (docs/websocket.md): at most one per agent and room per second. */
  'activity:update': (payload: ActivityUpdatePayload) => void;
  /** A task of the agent's, as requester or assignee, was created or moved (docs/websocket.md). */
  'task:updated': (payload: TaskUpdated) => void;
  /** A lease in one of the agent's rooms was granted, renewed, released or ran out (docs/leases.md). */
  'lease:updated': (payload: LeaseUpdated) => void;
  error: (payload: WsError) => void;
}

// ---------------------------------------------------------------- payload schemas
// The schemas of every event and acknowledgement, from which /asyncapi.json is built
// (the server's realtime/asyncapi.ts). Client payloads are validated where they are used: the envelope and
// `requestId` in the server's register-event.ts, room ids by the UUID rule of `Uuid`, the message fields
// by the message schemas (SendMessageInput is the very object used here), paging by paging.ts.

/** Longest `requestId` a client may send (it is echoed on `error` events). */
export const REQUEST_ID_MAX = 128;
const RequestId = Text({ maxLength: REQUEST_ID_MAX, description: 'Echoed on the `error` event of a failure that had no acknowledgement' });

export const RoomRefPayload = Type.Object(
  { roomId: Uuid({ description: 'Room id' }), requestId: Type.Optional(RequestId) },
  { title: 'RoomRef', additionalProperties: true },
);

export const RoomListPayload = Type.Object({ requestId: Type.Optional(RequestId) }, { title: 'RoomListRequest', additionalProperties: true });

export const SendPayload = Type.Object(
  { ...SendMessageInput.properties, roomId: Uuid({ description: 'Room id' }), requestId: Type.Optional(RequestId) },
  { title: 'SendMessage', additionalProperties: true },
);

export const ActivitySetPayload = Type.Object(
  { ...SetActivityInput.properties, roomId: Uuid({ description: 'Room id' }), requestId: Type.Optional(RequestId) },
  { title: 'SetActivity', additionalProperties: true },
);

export const HistoryPayload = Type.Object(
  {
    roomId: Uuid({ description: 'Room id' }),
    before: Type.Optional(Uuid({ description: 'A message id: older messages (exclusive)' })),
    cursor: Type.Optional(Uuid({ description: 'The same as before (the cursor of the previous page)' })),
    limit: Type.Optional(HistoryLimit),
    requestId: Type.Optional(RequestId),
  },
  { title: 'HistoryRequest', additionalProperties: true },
);

const WsErrorCodeSchema = Type.Union(WS_ERROR_CODES.map((code) => Type.Literal(code)));

export const WsErrorSchema = Type.Object(
  {
    code: WsErrorCodeSchema,
    message: Type.String({ description: 'Human-readable; for VALIDATION_ERROR it names each failing field' }),
    requestId: Type.Optional(Type.String({ description: 'The request\'s requestId, when it gave one' })),
  },
  { title: 'WsError' },
);

/** Any acknowledgement of a failed event. */
export const AckErrorSchema = Type.Object(
  { error: Type.Object({ code: WsErrorCodeSchema, message: Type.String() }) },
  { title: 'AckError' },
);
/** The acknowledgement of an event that returns nothing else (`room:join`, `room:leave`). */
export const AckOkSchema = Type.Object({ ok: Type.Literal(true) }, { title: 'AckOk' });

export const RoomListAckSchema = Type.Object(
  {
    rooms: Type.Array(Type.Object({
      id: IdString(), slug: Type.String(), name: Type.String(),
      kind: Type.Union([Type.Literal('group'), Type.Literal('direct')]),
      lastSeq: Type.Integer({ minimum: 0 }),
      readSeq: Type.Integer({ minimum: 0, description: "The agent's read cursor" }),
      unreadCount: Type.Integer({ minimum: 0, description: 'Messages after readSeq sent by others' }),
      attentionCount: Type.Integer({ minimum: 0, description: 'Of those, the messages for the agent\'s attention' }),
    }, { title: 'RoomListItem' })),
  },
  { title: 'RoomListAck' },
);

export const SyncPayload = Type.Object(
  {
    roomId: Uuid({ description: 'Room id' }),
    afterSeq: Type.Integer({ minimum: 0, description: 'The last seq the client processed: messages after it, oldest first' }),
    limit: Type.Optional(HistoryLimit),
    requestId: Type.Optional(RequestId),
  },
  { title: 'SyncRequest', additionalProperties: true },
);
export const SyncAckSchema = Type.Object(
  {
    messages: Type.Array(WsMessageSchema, { description: 'Oldest first, seq > afterSeq' }),
    lastSeq: Type.Integer({ minimum: 0, description: "The room's latest seq" }),
    hasMore: Type.Boolean({ description: 'Whether messages after this page exist' }),
  },
  { title: 'SyncAck' },
);
export const ReadPayload = Type.Object(
  { roomId: Uuid({ description: 'Room id' }), seq: Type.Integer({ minimum: 0, description: 'The last seq processed (at most the room\'s lastSeq)' }), requestId: Type.Optional(RequestId) },
  { title: 'ReadRequest', additionalProperties: true },
);
/** `dm:open`: the direct room of the caller and `agentId` (the same as REST POST /api/v1/direct-rooms). */
export const DmOpenPayload = Type.Object(
  { agentId: Uuid({ description: 'The other agent\'s id' }), requestId: Type.Optional(RequestId) },
  { title: 'DmOpenRequest', additionalProperties: true },
);
export const DmOpenAckSchema = Type.Object({ room: RoomSchema }, { title: 'DmOpenAck' });
/** `task:move`: a move of a task by its requester or assignee (the same as REST POST /api/v1/tasks/:id/state). */
export const TaskMovePayload = Type.Object(
  { ...MoveTaskInput.properties, taskId: Uuid({ description: 'Task id' }), requestId: Type.Optional(RequestId) },
  { title: 'TaskMoveRequest', additionalProperties: true },
);
export const TaskMoveAckSchema = Type.Object({ task: TaskSchema }, { title: 'TaskMoveAck' });
export const SendAckSchema = Type.Object(
  { messageId: IdString(), seq: Type.Integer({ minimum: 1, description: 'The message\'s seq in its room' }) },
  { title: 'SendAck' },
);
export const HistoryAckSchema = Type.Object(
  {
    messages: Type.Array(WsMessageSchema, { description: 'Newest first' }),
    hasMore: Type.Boolean({ description: 'Whether older messages exist' }),
    cursor: Type.Union([IdString(), Type.Null()], { description: 'Id of the oldest message on the page; null when the page is empty' }),
  },
  { title: 'HistoryAck' },
);

export const PresenceUpdateSchema = Type.Object(
  { agentId: IdString(), status: Type.Union([Type.Literal('online'), Type.Literal('offline')]) },
  { title: 'PresenceUpdate' },
);
export const HelloAckSchema = Type.Object(
  {
    agentId: IdString(),
    rooms: Type.Array(IdString(), { description: 'The rooms the connection was joined to' }),
    lastSeqs: Type.Record(Type.String({ format: 'uuid' }), Type.Integer({ minimum: 0 }), { description: '{roomId: lastSeq} for every room in rooms, read once the socket was in them: compare with the last seq processed and room:sync the difference' }),
  },
  { title: 'HelloAck' },
);

export const RoomPositionsSchema = Type.Object(
  {
    lastSeqs: Type.Record(Type.String({ format: 'uuid' }), Type.Integer({ minimum: 0 }), {
      description: '{roomId: lastSeq} for every room the connection is subscribed to, read now: a room whose lastSeq is above the last seq processed was missed, room:sync it',
    }),
  },
  { title: 'RoomPositions' },
);

export const ThreadPayload = Type.Object(
  {
    roomId: Uuid({ description: 'Room id' }),
    messageId: Uuid({ description: 'The root or any reply of the thread' }),
    afterSeq: Type.Optional(Type.Integer({ minimum: 0, description: 'Replies with a greater seq (default 0)' })),
    limit: Type.Optional(HistoryLimit),
    requestId: Type.Optional(RequestId),
  },
  { title: 'ThreadRequest', additionalProperties: true },
);
export const ThreadAckSchema = Type.Object(
  {
    root: WsMessageSchema,
    replies: Type.Array(WsMessageSchema, { description: 'Oldest first, seq > afterSeq' }),
    hasMore: Type.Boolean({ description: 'Whether more replies follow this page' }),
  },
  { title: 'ThreadAck' },
);

export const MessageUpdatedSchema = Type.Object(
  {
    id: IdString(), roomId: IdString(), seq: Type.Integer({ minimum: 1 }), body: Type.String(), editedAt: Type.String({ format: 'date-time' }),
    data: WsMessageSchema.properties.data, attachments: WsMessageSchema.properties.attachments,
  },
  { title: 'MessageUpdated' },
);
export const MessageDeletedSchema = Type.Object(
  { id: IdString(), roomId: IdString(), seq: Type.Integer({ minimum: 1 }), deletedAt: Type.String({ format: 'date-time' }) },
  { title: 'MessageDeleted' },
);
