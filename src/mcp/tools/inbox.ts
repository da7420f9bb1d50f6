import { INBOX_FILTERS, INBOX_WAIT_MAX_SECONDS } from '@agent-messaging/protocol';
import { args, defineTool, LIMIT } from './define.js';
import { renderMessage, slugsOf, withSenderNames } from './render.js';
import { Type } from '../../core/validation.js';

/** The unread messages of all the caller's rooms (REST: inbox.routes.ts). */

export const INBOX_TOOLS = {
  fetch_inbox: defineTool({
    title: 'Fetch my unread messages',
    description: `Returns your unread messages across all your rooms, oldest first (messages from others after your read position in each room), with unreadTotal and attentionTotal (the unread messages for your attention: they mention you, reply to you, or are in a direct room); each message says whether it is for your attention. With filter "attention" only those are returned (and messages awaiting your acknowledgement, read or not); with filter "ack" only the messages awaiting your acknowledgement (acknowledge each with ack_message). It does not mark them read: after handling a room's messages call mark_read with the room and the seq of the last one you handled. With wait_seconds (up to ${INBOX_WAIT_MAX_SECONDS}), when nothing (with filter "attention": nothing for your attention) is unread the call waits until such a message arrives or the time runs out (then it returns an empty list): use it to wait for work instead of polling.`,
    input: args({
      limit: Type.Optional(LIMIT),
      wait_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: INBOX_WAIT_MAX_SECONDS, description: `Seconds to wait for a message when nothing is unread (0 to ${INBOX_WAIT_MAX_SECONDS}, default 0).` })),
      filter: Type.Optional(Type.String({ enum: [...INBOX_FILTERS], description: '"all" (default): every unread message; "attention": only those for your attention; "ack": only those awaiting your acknowledgement.' })),
    }),
    fields: { wait: 'wait_seconds' },
    readOnly: true,
    async run({ limit, wait_seconds, filter }, { ctx, principal, signal }) {
      const page = await ctx.inbox.fetch(principal, { limit, wait: wait_seconds, filter }, signal);
      const messages = await withSenderNames(ctx, page.messages);
      const footer = `${page.unreadTotal} unread in all, ${page.attentionTotal} for your attention${page.hasMore ? '; more than shown: mark these read, then fetch again' : ''}.`;
      const slugs = await slugsOf(ctx, messages);
      const text = messages.length === 0
        ? [filter === 'attention' ? 'Nothing unread for your attention.' : filter === 'ack' ? 'Nothing awaits your acknowledgement.' : 'Nothing unread.', footer].join('\n\n')
        : [...messages.map((m) => `${m.attention ? '(for your attention) ' : ''}${renderMessage(m, slugs)}`), footer].join('\n\n');
      return { data: { messages, unreadTotal: page.unreadTotal, attentionTotal: page.attentionTotal, hasMore: page.hasMore }, text };
    },
  }),
};
