import { IdString, Timestamp } from './common.schema.js';
import { Type, Text, Uuid } from './text.js';
import { MessageTaskSchema } from './tasks.schema.js';

export const MESSAGE_BODY_MAX = 16_384;
/** Distinct agents one message may mention (a repeated id counts once; the array itself up to 100). */
export const MENTIONS_MAX = 50;
export const HISTORY_LIMIT_DEFAULT = 50;
export const HISTORY_LIMIT_MAX = 100;
export const HISTORY_LIMITS = { default: HISTORY_LIMIT_DEFAULT, max: HISTORY_LIMIT_MAX };
/** A message's `data`: at most this many bytes as compact UTF-8 JSON, and this many levels deep. */
export const MESSAGE_DATA_MAX_BYTES = 32_768;
export const MESSAGE_DATA_MAX_DEPTH = 16;
/** Files one message may carry. */
export const ATTACHMENTS_MAX = 10;
/** A message's importance (docs/acknowledgements.md): `urgent` is for the attention of every member but its sender. */
export const IMPORTANCES = ['low', 'normal', 'high', 'urgent'] as const;
export type Importance = (typeof IMPORTANCES)[number];

/**
 * Why a send's `data` is refused, or null when it is a storable JSON object (docs/protocol.md,
 * Messages): an object (not an array or a scalar) of JSON values only (finite numbers), at most
 * MESSAGE_DATA_MAX_DEPTH levels deep (`{}` is 1; each nested object or array adds 1) and at most
 * MESSAGE_DATA_MAX_BYTES as compact UTF-8 JSON. The depth is checked first and stops at the limit,
 * so a hostile nesting costs no deep recursion.
 */
export function messageDataProblem(data: unknown): string | null {
  const checked = checkMessageData(data);
  return 'problem' in checked ? checked.problem : null;
}

/** UTF-8 bytes of a string, without encoding it (lone surrogates count 3, as TextEncoder's U+FFFD). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * messageDataProblem's check, and on success the compact JSON it measured, so that a caller that
 * stores it does not serialise it again.
 */
export function checkMessageData(data: unknown): { problem: string } | { json: string } {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { problem: 'must be a JSON object (or null)' };
  const tooDeep = `must not nest objects and arrays more than ${MESSAGE_DATA_MAX_DEPTH} levels deep`;
  const walk = (value: unknown, depth: number): string | null => {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
    if (typeof value === 'number') return Number.isFinite(value) ? null : 'must hold finite numbers only';
    const isArray = Array.isArray(value);
    if (typeof value !== 'object' || (!isArray && Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)) {
      return 'must hold JSON values only';
    }
    if (depth > MESSAGE_DATA_MAX_DEPTH) return tooDeep;
    for (const item of isArray ? (value as unknown[]) : Object.values(value as Record<string, unknown>)) {
      const problem = walk(item, depth + 1);
      if (problem !== null) return problem;
    }
    return null;
  };
  const problem = walk(data, 1);
  if (problem !== null) return { problem };
  const json = JSON.stringify(data);
  // At most 3 bytes per UTF-16 unit: a short text is within the limit without counting.
  if (json.length * 3 > MESSAGE_DATA_MAX_BYTES) {
    const bytes = utf8Bytes(json);
    if (bytes > MESSAGE_DATA_MAX_BYTES) return { problem: `must be at most ${MESSAGE_DATA_MAX_BYTES} bytes as compact JSON (is ${bytes})` };
  }
  return { json };
}

/** The message fields of a send, shared by REST (`POST .../messages`) and WebSocket (`message:send`). */
export const SendMessageInput = Type.Object(
  {
    // At least 1 character, unless `streaming` (the service checks: "" is 400 details.body otherwise).
    body: Text({ maxLength: MESSAGE_BODY_MAX, description: 'The text (at least 1 character; may be "" with streaming: true)' }),
    mentions: Type.Optional(Type.Array(Uuid(), { maxItems: 100 })),
    replyTo: Type.Optional(Uuid()),
    clientMsgId: Type.Optional(Text({ minLength: 1, maxLength: 64 })),
    data: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: `A JSON object for programs (null: none): at most ${MESSAGE_DATA_MAX_BYTES} bytes as compact UTF-8 JSON and ${MESSAGE_DATA_MAX_DEPTH} levels deep; not searched`,
    })),
    attachments: Type.Optional(Type.Union([Type.Array(Uuid(), { maxItems: ATTACHMENTS_MAX, uniqueItems: true }), Type.Null()], {
      description: `Ids of files the sender uploaded, completed (at most ${ATTACHMENTS_MAX}, no repeats), in the order shown (null: none)`,
    })),
    streaming: Type.Optional(Type.Boolean({ description: 'Start a streamed message (docs/streaming.md): appended to, then ended' })),
    importance: Type.Optional(Type.Union([...IMPORTANCES.map((i) => Type.Literal(i)), Type.Null()], { description: 'low, normal (default; null: the same), high or urgent (for the attention of every member but the sender)' })),
    ackRequired: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: 'true: the agents in mentions (or, without mentions, every member but the sender) must acknowledge it' })),
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

/** A file as a message carries it. */
export const AttachmentSchema = Type.Object(
  {
    id: IdString('The file id (GET /api/v1/files/:id downloads it)'),
    name: Type.String({ description: 'The file name given at upload' }),
    contentType: Type.String({ description: 'The Content-Type given at upload' }),
    size: Type.Integer({ minimum: 0, description: 'Bytes' }),
    sha256: Type.String({ description: 'SHA-256 of the bytes, lowercase hex' }),
  },
  { title: 'Attachment' },
);

/** A message's acknowledgements as every representation counts them (docs/acknowledgements.md). */
function AckCountsSchema() {
  return Type.Object({
    required: Type.Integer({ minimum: 0, description: 'Agents that must acknowledge it (fixed at the send)' }),
    acked: Type.Integer({ minimum: 0, description: 'Of them, those that did' }),
  }, { title: 'AckCounts' });
}

/** `POST .../messages/:messageId/ack` (WebSocket `message:ack`, MCP `ack_message`): when the caller acknowledged it. */
export const AckResultSchema = Type.Object({ ackedAt: Timestamp('When the caller acknowledged the message (the same on a repeat)') }, { title: 'AckResult' });

/** `GET .../messages/:messageId/acks`: who acknowledged (oldest first) and who has not yet. */
export const AckListSchema = Type.Object({
  acked: Type.Array(Type.Object({ agentId: IdString(), at: Timestamp() }), { description: 'Oldest first' }),
  pending: Type.Array(IdString(), { description: 'Agents that must acknowledge it and have not' }),
}, { title: 'AckList' });

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
  deletedAt: Type.Union([Timestamp(), Type.Null()], { description: 'When the message was deleted (body "", mentions empty, data null, no attachments); null if not' }),
  data: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'The JSON object the send gave; null when none' }),
  attachments: Type.Array(AttachmentSchema, { description: 'The files the send gave, in its order; [] when none' }),
  task: Type.Union([MessageTaskSchema, Type.Null()], { description: 'The task whose creation or move posted this message, with the state that move set; null when none' }),
  streaming: Type.Boolean({ description: 'True while its sender streams it (docs/streaming.md)' }),
  streamEnd: Type.Union([Type.Literal('complete'), Type.Literal('interrupted'), Type.Null()], { description: 'How a streamed message ended; null while open or when sent whole' }),
  importance: Type.Union(IMPORTANCES.map((i) => Type.Literal(i)), { description: 'low, normal, high or urgent' }),
  ack: Type.Union([AckCountsSchema(), Type.Null()], { description: 'null unless the send asked for acknowledgements: how many must acknowledge, and how many did' }),
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
    oldestSeq: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The lowest seq still stored in the room (retention deletes the oldest messages); null when none' }),
  },
  { title: 'HistoryPage' },
);

/** A forward catch-up page (`?afterSeq=`, `room:sync` with WebSocket items). */
export const SyncPageSchema = Type.Object(
  {
    messages: Type.Array(MessageSchema, { description: 'Oldest first, seq > afterSeq' }),
    lastSeq: Type.Integer({ minimum: 0, description: "The room's latest seq" }),
    hasMore: Type.Boolean({ description: 'Whether messages after this page exist (up to lastSeq)' }),
    oldestSeq: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The lowest seq still stored in the room (retention deletes the oldest messages); null when none' }),
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

/** `POST .../messages/:messageId/append` (and `message:append`): text added to an open streamed message. */
export const AppendMessageInput = Type.Object(
  { text: Text({ minLength: 1, maxLength: MESSAGE_BODY_MAX, description: `Added to the body (at most ${MESSAGE_BODY_MAX} characters in all)` }) },
  { additionalProperties: true },
);
export const AppendResultSchema = Type.Object(
  { length: Type.Integer({ minimum: 0, description: 'The body\'s length after the append, in characters (code points)' }) },
  { title: 'AppendResult' },
);

/** `POST .../messages/:messageId/end` (and `message:end`): ends a streamed message; `body` replaces the text, `data` is set. */
export const EndMessageInput = Type.Object(
  {
    body: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_BODY_MAX, description: 'Replaces the text streamed so far' })),
    data: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'The message\'s JSON object, as a send takes it' })),
  },
  { additionalProperties: true },
);
