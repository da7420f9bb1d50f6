import { MessageSchema, HistoryLimit } from './messages.schema.js';
import { Type } from './text.js';

/** Longest `wait` of `GET /api/v1/inbox`, in seconds. */
export const INBOX_WAIT_MAX_SECONDS = 30;

/** `filter` of the inbox: every unread message, or only those for the caller's attention. */
export const INBOX_FILTERS = ['all', 'attention', 'ack'] as const;
export type InboxFilter = (typeof INBOX_FILTERS)[number];

export const InboxQuerySchema = Type.Object({
  limit: Type.Optional(HistoryLimit),
  filter: Type.Optional(Type.String({ enum: [...INBOX_FILTERS], default: 'all', description: '`attention`: only messages for the caller\'s attention (unread ones that mention it, are in direct rooms, reply to it or are urgent, and those awaiting its acknowledgement); `ack`: only those awaiting its acknowledgement, read or not; `all` (default): every unread message' })),
  wait: Type.Optional(Type.Number({ minimum: 0, maximum: INBOX_WAIT_MAX_SECONDS, default: 0, description: 'Seconds to hold the request while nothing is unread' })),
});

/** An inbox item: the Message and whether it is for the caller's attention. */
export const InboxMessageSchema = Type.Object({ ...MessageSchema.properties, attention: Type.Boolean({ description: 'Whether the message is for the caller\'s attention' }) }, { title: 'InboxMessage' });

export const InboxPageSchema = Type.Object(
  {
    messages: Type.Array(InboxMessageSchema, { description: 'Unread messages of all the caller’s rooms (only those for its attention with filter=attention), oldest first (createdAt, then id)' }),
    hasMore: Type.Boolean({ description: 'Whether more messages follow that the filter selects' }),
    unreadTotal: Type.Integer({ minimum: 0, description: 'Unread messages in all, this page included' }),
    attentionTotal: Type.Integer({ minimum: 0, description: 'Unread messages for the caller\'s attention, this page included' }),
  },
  { title: 'InboxPage' },
);
