import type { MessagesService } from '../../core/messages/messages.service.js';
import type { EventSpec } from '../connection/register-event.js';
import { toWsMessage } from '../protocol.js';

/**
 * `message:send` and `message:history`: the same domain functions as REST, so validation, storage,
 * audit, the metric and the `message:new` fan-out are one code path.
 */
export function messageHandlers(deps: { messages: MessagesService }): Record<'message:send' | 'message:history', EventSpec> {
  const { messages } = deps;
  return {
    'message:send': {
      async handle({ principal, payload }) {
        // Stored and audited, then published (message:new to the room, sender included), then acknowledged.
        const { message } = await messages.send(principal, payload.roomId, payload);
        return { messageId: message.id };
      },
    },

    'message:history': {
      requiresAck: true,
      async handle({ principal, payload }) {
        // `cursor` is accepted as a synonym of `before`, as on REST: it is what the previous page returned.
        const { before, cursor, limit } = payload;
        const page = await messages.history(principal, payload.roomId, { before, cursor, limit });
        return { messages: page.messages.map(toWsMessage), hasMore: page.hasMore, cursor: page.nextCursor };
      },
    },
  };
}
