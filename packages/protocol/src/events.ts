import { Type, type Static } from '@sinclair/typebox';
import { SetActivityInput, type ActivityUpdatePayload } from './activity.schema.js';
import { IdString } from './common.schema.js';
import { AppendMessageInput, EndMessageInput, HistoryLimit, SendMessageInput, WsMessageSchema } from './messages.schema.js';
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
export const CLIENT_EVENTS = ['room:join', 'room:leave', 'room:list', 'message:send', 'message:history', 'room:sync', 'room:read', 'message:thread', 'dm:open', 'activity:set', 'task:move',
  'message:append', 'message:end', 'message:ack'] as const;
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

/** `message:updated`: a message of one of the connection's rooms was edited, or a streamed one ended (editedAt null). */
export interface MessageUpdated {
  id: string;
  roomId: string;
  seq: number;
  body: string;
  editedAt: string | null;
  streaming?: boolean;
  streamEnd?: WsMessage['streamEnd'];
  /** As the message carries them (an edit changes the body only). */
  data: WsMessage['data'];
  attachments: WsMessage['attachments'];
}

/**
 * `message:delta`: text appended to an open streamed message (docs/streaming.md). `offset` is the
 * body's length before `text`, in characters: a reader whose text is shorter missed a delta.
 */
export interface MessageDelta {
  roomId: string;
  messageId: string;
  seq: number;
  offset: number;
  text: string;
}

/** `message:deleted`: a message of one of the connection's rooms was deleted (it stays as a tombstone). */
export interface MessageDeleted {
  id: string;
  roomId: string;
  seq: number;
  deletedAt: string;
}

/** `message:acked`: to the sender's sockets only, once per agent that acknowledged. */
export interface MessageAcked {
  roomId: string;
  messageId: string;
  agentId: string;
  at: string;
}

export interface ServerToClientEvents {
  'agent:hello-ack': (payload: HelloAck) => void;
  'room:positions': (payload: RoomPositions) => void;
  'message:updated': (payload: MessageUpdated) => void;
  'message:deleted': (payload: MessageDeleted) => void;
  'message:delta': (payload: MessageDelta) => void;
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
  /** An agent acknowledged a message the agent sent (docs/acknowledgements.md). */
  'message:acked': (payload: MessageAcked) => void;
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
    oldestSeq: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The lowest seq still stored in the room (retention deletes the oldest messages); null when none' }),
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
    oldestSeq: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The lowest seq still stored in the room (retention deletes the oldest messages); null when none' }),
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
    id: IdString(), roomId: IdString(), seq: Type.Integer({ minimum: 1 }), body: Type.String(),
    editedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Null when a streamed message ended' }),
    data: WsMessageSchema.properties.data, attachments: WsMessageSchema.properties.attachments,
    streaming: Type.Optional(WsMessageSchema.properties.streaming),
    streamEnd: Type.Optional(WsMessageSchema.properties.streamEnd),
  },
  { title: 'MessageUpdated' },
);
export const MessageDeletedSchema = Type.Object(
  { id: IdString(), roomId: IdString(), seq: Type.Integer({ minimum: 1 }), deletedAt: Type.String({ format: 'date-time' }) },
  { title: 'MessageDeleted' },
);

/** `message:append`: text added to an open streamed message (docs/streaming.md). */
export const AppendPayload = Type.Object(
  { ...AppendMessageInput.properties, roomId: Uuid({ description: 'Room id' }), messageId: Uuid({ description: 'The streamed message' }), requestId: Type.Optional(RequestId) },
  { title: 'AppendRequest', additionalProperties: true },
);
export const AppendAckSchema = Type.Object(
  { ok: Type.Literal(true), length: Type.Integer({ minimum: 0, description: 'The body\'s length after the append, in characters' }) },
  { title: 'AppendAck' },
);
/** `message:end`: ends a streamed message; `body` replaces its text, `data` is set. */
export const EndPayload = Type.Object(
  { ...EndMessageInput.properties, roomId: Uuid({ description: 'Room id' }), messageId: Uuid({ description: 'The streamed message' }), requestId: Type.Optional(RequestId) },
  { title: 'EndRequest', additionalProperties: true },
);
export const EndAckSchema = Type.Object({ message: WsMessageSchema }, { title: 'EndAck' });
export const MessageDeltaSchema = Type.Object(
  {
    roomId: IdString(), messageId: IdString(), seq: Type.Integer({ minimum: 1 }),
    offset: Type.Integer({ minimum: 0, description: 'The body\'s length before text, in characters: a reader whose text is shorter missed a delta' }),
    text: Type.String({ description: 'The appended text (appends merged: at most one delta per 40 ms per message)' }),
  },
  { title: 'MessageDelta' },
);
/** `message:ack`: the caller acknowledges a message that asks it to (docs/acknowledgements.md). */
export const MessageAckPayload = Type.Object(
  { roomId: Uuid({ description: 'Room id' }), messageId: Uuid({ description: 'Message id' }), requestId: Type.Optional(RequestId) },
  { title: 'MessageAckRequest', additionalProperties: true },
);
export const MessageAckAckSchema = Type.Object({ ackedAt: Type.String({ format: 'date-time', description: 'When the caller acknowledged it (the same on a repeat)' }) }, { title: 'MessageAckAck' });
export const MessageAckedSchema = Type.Object(
  { roomId: IdString(), messageId: IdString(), agentId: IdString('The agent that acknowledged'), at: Type.String({ format: 'date-time' }) },
  { title: 'MessageAcked' },
);
