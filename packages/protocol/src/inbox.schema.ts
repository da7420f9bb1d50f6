import { MessageSchema, HistoryLimit } from './messages.schema.js';
import { Type } from './text.js';

/** Longest `wait` of `GET /api/v1/inbox`, in seconds. */
export const INBOX_WAIT_MAX_SECONDS = 30;

export const InboxQuerySchema = Type.Object({
  limit: Type.Optional(HistoryLimit),
  wait: Type.Optional(Type.Number({ minimum: 0, maximum: INBOX_WAIT_MAX_SECONDS, default: 0, description: 'Seconds to hold the request while nothing is unread' })),
});

export const InboxPageSchema = Type.Object(
  {
    messages: Type.Array(MessageSchema, { description: 'Unread messages of all the caller’s rooms, oldest first (createdAt, then id)' }),
    hasMore: Type.Boolean(),
    unreadTotal: Type.Integer({ minimum: 0, description: 'Unread messages in all, this page included' }),
  },
  { title: 'InboxPage' },
);
