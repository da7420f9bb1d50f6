import type { MessagesService } from '../../core/messages/messages.service.js';
import type { StreamsService } from '../../core/messages/streams.js';
import type { EventSpec } from '../connection/register-event.js';
import { toWsMessage } from '../protocol.js';

/**
 * `message:send`, `message:history`, `room:sync` and `message:thread`: the same domain functions as REST, so validation, storage,
 * audit, the metric and the `message:new` fan-out are one code path.
 */
export function messageHandlers(deps: { messages: MessagesService; streams: StreamsService }): Record<'message:send' | 'message:history' | 'room:sync' | 'message:thread' | 'message:append' | 'message:end', EventSpec> {
  const { messages, streams } = deps;
  return {
    'message:send': {
      // Pipelined: the socket's next send is validated and queued while this one commits.
      async begin({ principal, payload }) {
        const { committed } = await messages.submit(principal, payload.roomId, payload, undefined, { via: 'ws' });
        // Stored and audited, then published (message:new to the room, sender included), then acknowledged.
        // A clientMsgId repeat acknowledges the original's id and seq.
        return { done: committed.then(({ message }) => ({ messageId: message.id, seq: message.seq })) };
      },
    },

    // Streamed messages (docs/streaming.md): the same functions as REST's .../append and .../end.
    'message:append': {
      requiresAck: true,
      async handle({ principal, payload }) {
        const { length } = await streams.append(principal, payload.roomId, payload.messageId, payload);
        return { ok: true, length };
      },
    },

    'message:end': {
      requiresAck: true,
      async handle({ principal, payload }) {
        const message = await streams.end(principal, payload.roomId, payload.messageId, payload);
        return { message: toWsMessage(message) };
      },
    },

    'message:history': {
      requiresAck: true,
      async handle({ principal, payload }) {
        // `cursor` is accepted as a synonym of `before`, as on REST: it is what the previous page returned.
        const { before, cursor, limit } = payload;
        const page = await messages.history(principal, payload.roomId, { before, cursor, limit });
        return { messages: page.messages.map(toWsMessage), hasMore: page.hasMore, cursor: page.nextCursor, oldestSeq: page.oldestSeq };
      },
    },

    'room:sync': {
      // Forward catch-up (docs/catch-up.md): what REST gives for ?afterSeq=, oldest first.
      requiresAck: true,
      async handle({ principal, payload }) {
        const { afterSeq, limit, before, cursor } = payload;
        const page = await messages.sync(principal, payload.roomId, { afterSeq, limit, before, cursor });
        return { messages: page.messages.map(toWsMessage), lastSeq: page.lastSeq, hasMore: page.hasMore, oldestSeq: page.oldestSeq };
      },
    },

    'message:thread': {
      // A thread (docs/threads-and-edits.md): what REST gives for GET .../messages/:messageId/thread.
      requiresAck: true,
      async handle({ principal, payload }) {
        const { afterSeq, limit } = payload;
        const page = await messages.thread(principal, payload.roomId, payload.messageId, { afterSeq, limit });
        return { root: toWsMessage(page.root), replies: page.replies.map(toWsMessage), hasMore: page.hasMore };
      },
    },
  };
}
