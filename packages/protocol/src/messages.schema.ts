import { IdString, Timestamp } from './common.schema.js';
import { Type, Text, Uuid } from './text.js';
import { MessageTaskSchema } from './tasks.schema.js';

export const MESSAGE_BODY_MAX = 16_384;
/** Distinct agents one message may mention (a repeated id counts once; the array itself up to 100). */
export const MENTIONS_MAX = 50;
export const HISTORY_LIMIT_DEFAULT = 50;
export const HISTORY_LIMIT_MAX = 100;
export const HISTORY_LIMITS = { default: HISTORY_LIMIT_DEFAULT, max: HISTORY_LIMIT_MAX };

/** The message fields of a send, shared by REST (`POST .../messages`) and WebSocket (`message:send`). */
export const SendMessageInput = Type.Object(
  {
    body: Text({ minLength: 1, maxLength: MESSAGE_BODY_MAX }),
    mentions: Type.Optional(Type.Array(Uuid(), { maxItems: 100 })),
    replyTo: Type.Optional(Uuid()),
    clientMsgId: Type.Optional(Text({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: true },
);

/** `PATCH .../messages/:messageId`: the new body, under the rules of a send. */
export const EditMessageInput = Type.Object(
  { body: Text({ minLength: 1, maxLength: MESSAGE_BODY_MAX }) },
  { additionalProperties: true },
);

/** `limit` of history pages: a whole number 1..100, default 50 (parsed by paging.ts). */
export const HistoryLimit = Type.Integer({ minimum: 1, maximum: HISTORY_LIMIT_MAX, default: HISTORY_LIMIT_DEFAULT });

/** Forward catch-up (`afterSeq`): whole number >= 0; not together with `before` or `cursor`. */
export const AfterSeq = Type.Integer({ minimum: 0, description: 'Messages with a greater seq, oldest first (not with before/cursor)' });

/** REST history query: `before` and `cursor` mean the same (exclusive, older messages). */
export const HistoryQuerySchema = Type.Object({
  before: Type.Optional(Uuid({ description: 'A message id: return messages older than it (exclusive)' })),
  cursor: Type.Optional(Uuid({ description: 'The same as before (the nextCursor of the previous page)' })),
  limit: Type.Optional(HistoryLimit),
  afterSeq: Type.Optional(AfterSeq),
});

/** The fields a message carries on both transports; the author's name differs (senderId / authorAgentId). */
const messageFields = {
  id: IdString(),
  roomId: IdString(),
  body: Type.String({ maxLength: MESSAGE_BODY_MAX, description: 'The text; "" once deleted' }),
  createdAt: Timestamp(),
  seq: Type.Integer({ minimum: 1, description: 'Position in the room: 1, 2, 3… gapless, in commit order' }),
  mentions: Type.Optional(Type.Array(IdString(), { description: 'Agent ids, when the send gave them' })),
  replyTo: Type.Optional(IdString('The message replied to, when the send gave one')),
  clientMsgId: Type.Optional(Type.String({ description: 'The sender\'s idempotency key, when the send gave one' })),
  threadId: Type.Union([IdString(), Type.Null()], { description: 'The root of the thread this message replies in; null when it is not a reply' }),
  replyCount: Type.Optional(Type.Integer({ minimum: 0, description: 'Not on replies: how many replies its thread has (deleted ones included)' })),
  lastReplyAt: Type.Optional(Type.Union([Timestamp(), Type.Null()], { description: 'Not on replies: when the newest reply was sent; null without replies' })),
  editedAt: Type.Union([Timestamp(), Type.Null()], { description: 'When the body was last edited; null if never' }),
  deletedAt: Type.Union([Timestamp(), Type.Null()], { description: 'When the message was deleted (body "", mentions empty); null if not' }),
  task: Type.Union([MessageTaskSchema, Type.Null()], { description: 'The task whose creation or move posted this message, with the state that move set; null when none' }),
};

/** The REST Message object. */
export const MessageSchema = Type.Object({ ...messageFields, senderId: IdString('The sending agent') }, { title: 'Message' });

/** A message as WebSocket payloads carry it (`message:new`, `message:history` items). */
export const WsMessageSchema = Type.Object({ ...messageFields, authorAgentId: IdString('The sending agent') }, { title: 'WsMessage' });

export const HistoryPageSchema = Type.Object(
  {
    messages: Type.Array(MessageSchema, { description: 'Newest first' }),
    nextCursor: Type.Union([IdString(), Type.Null()], { description: 'Id of the oldest message on the page; null when the page is empty' }),
    hasMore: Type.Boolean({ description: 'Whether older messages exist' }),
  },
  { title: 'HistoryPage' },
);

/** A forward catch-up page (`?afterSeq=`, `room:sync` with WebSocket items). */
export const SyncPageSchema = Type.Object(
  {
    messages: Type.Array(MessageSchema, { description: 'Oldest first, seq > afterSeq' }),
    lastSeq: Type.Integer({ minimum: 0, description: "The room's latest seq" }),
    hasMore: Type.Boolean({ description: 'Whether messages after this page exist (up to lastSeq)' }),
  },
  { title: 'SyncPage' },
);

/** `GET /api/v1/rooms/:id/messages`: history without `afterSeq`, a catch-up page with it. */
export const MessagesPageSchema = Type.Union([HistoryPageSchema, SyncPageSchema], { title: 'MessagesPage' });

/** `:id` and `:messageId` of a message's routes (its thread, edits, deletion). */
export const MessageParams = Type.Object({ id: Uuid({ description: 'Room id' }), messageId: Uuid({ description: 'Message id: the root or any reply of the thread' }) });

/** `GET .../messages/:messageId/thread`: replies with `seq > afterSeq`, oldest first. */
export const ThreadQuerySchema = Type.Object({
  afterSeq: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Replies with a greater seq (default 0: from the first)' })),
  limit: Type.Optional(HistoryLimit),
});

/** A thread: its root and a page of its replies (REST items; WebSocket `message:thread` with WS items). */
export const ThreadPageSchema = Type.Object(
  {
    root: MessageSchema,
    replies: Type.Array(MessageSchema, { description: 'Oldest first, seq > afterSeq' }),
    hasMore: Type.Boolean({ description: 'Whether more replies follow this page' }),
  },
  { title: 'ThreadPage' },
);
