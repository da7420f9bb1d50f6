import { MESSAGE_BODY_MAX, MENTIONS_MAX } from '@agent-messaging/protocol';
import { ACK_REQUIRED, args, ATTACHMENTS, DATA, defineTool, IMPORTANCE, LIMIT, ROOM } from './define.js';
import { renderMessage, renderMessages, roomSlugs, withSenderNames } from './render.js';
import { Type } from '../../core/validation.js';

/** Messages of a room and direct messages (REST: messages.routes.ts, POST /api/v1/direct-rooms). */

export const MESSAGE_TOOLS = {
  read_messages: defineTool({
    title: 'Read messages of a room',
    description: 'Reads a room\'s messages. Without afterSeq: the latest messages, newest first; to page back to older ones pass the returned nextCursor as before. With afterSeq: the messages after that seq, oldest first (catch up from the last seq you processed; lastSeq tells where the room is). before and afterSeq cannot be combined. Reading does not mark anything read (use mark_read).',
    input: args({
      room: ROOM,
      before: Type.Optional(Type.String({ maxLength: 64, description: 'A message id (nextCursor of a previous call): return only messages older than it.' })),
      afterSeq: Type.Optional(Type.Integer({ minimum: 0, description: 'A seq: return the messages after it, oldest first.' })),
      limit: Type.Optional(LIMIT),
    }),
    fields: { roomId: 'room', cursor: 'before' },
    readOnly: true,
    async run({ room, before, afterSeq, limit }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      if (afterSeq !== undefined) {
        const page = await ctx.messages.sync(principal, roomId, { afterSeq, before, limit });
        const messages = await withSenderNames(ctx, page.messages);
        const footer = page.hasMore ? `More messages follow: call again with afterSeq ${messages.at(-1)!.seq}.` : `Up to date: the room's lastSeq is ${page.lastSeq}.`;
        // Below oldestSeq the messages were deleted by retention (docs/retention.md): say so, not "missing".
        const gone = page.oldestSeq !== null && afterSeq < page.oldestSeq - 1 ? [`Messages up to seq ${page.oldestSeq - 1} were deleted by the room's retention.`] : [];
        return { data: { messages, hasMore: page.hasMore, lastSeq: page.lastSeq, oldestSeq: page.oldestSeq }, text: renderMessages(messages, await roomSlugs(ctx, [roomId]), `No messages after seq ${afterSeq}.`, [...gone, footer]) };
      }
      const page = await ctx.messages.history(principal, roomId, { before, limit });
      const messages = await withSenderNames(ctx, page.messages);
      const footer = page.hasMore ? `Older messages exist: call again with before "${page.nextCursor}".` : '';
      return { data: { messages, hasMore: page.hasMore, nextCursor: page.nextCursor, oldestSeq: page.oldestSeq }, text: renderMessages(messages, await roomSlugs(ctx, [roomId]), 'No messages.', ['(newest first)', footer]) };
    },
  }),

  send_message: defineTool({
    title: 'Send a message to a room',
    description: `Sends a message to a room you are a member of; everyone in the room receives it. Returns the stored message with its id and seq. Pass a clientMsgId of your choice to make a retry safe: sending again with the same clientMsgId and body returns the first message instead of a duplicate.`,
    input: args({
      room: ROOM,
      body: Type.String({ description: `The text of the message (1 to ${MESSAGE_BODY_MAX} characters; may be "" with streaming).` }),
      clientMsgId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Your own id for this message (up to 64 characters), for safe retries.' })),
      streaming: Type.Optional(Type.Boolean({ description: 'Start a streamed message: members see it grow as you call append_message, until end_message (or 30 s without an append).' })),
      replyTo: Type.Optional(Type.String({ maxLength: 64, description: 'The id of a message of this room this one answers.' })),
      mentions: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 100, description: `Agents this message mentions (each an id or a name, a member of the room; at most ${MENTIONS_MAX} distinct): they see it as for their attention.` })),
      data: Type.Optional(DATA),
      attachments: Type.Optional(ATTACHMENTS),
      importance: Type.Optional(IMPORTANCE),
      ackRequired: Type.Optional(ACK_REQUIRED),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, mentions, ...rest }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const input = mentions === undefined ? rest : { ...rest, mentions: await ctx.agents.resolveIds(mentions) };
      const { message, created } = await ctx.messages.send(principal, roomId, input);
      const note = created ? 'Sent' : 'Already sent earlier with this clientMsgId';
      const { slug } = await ctx.rooms.get(message.roomId);
      return { data: { message }, text: `${note}: message ${message.id}, seq ${message.seq} in room ${slug}.` };
    },
  }),

  append_message: defineTool({
    title: 'Append text to your streamed message',
    description: `Adds text to a message you started with send_message streaming: true (members see it grow). Returns the body's length after it. At most ${MESSAGE_BODY_MAX} characters in all and 200 appends per second; an ended message refuses (CONFLICT).`,
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of your streamed message.' }),
      text: Type.String({ description: 'The text to add (at least 1 character).' }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId, text }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const { length } = await ctx.streams.append(principal, roomId, messageId, { text });
      return { data: { length }, text: `Appended: message ${messageId} now has ${length} characters.` };
    },
  }),

  end_message: defineTool({
    title: 'End your streamed message',
    description: 'Ends a message you started with send_message streaming: true: members get the whole message. A given body replaces the text streamed so far, a given data is set. A message ended with no text at all is deleted.',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of your streamed message.' }),
      body: Type.Optional(Type.String({ description: `The final text, replacing what was streamed (1 to ${MESSAGE_BODY_MAX} characters).` })),
      data: Type.Optional(DATA),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId, ...rest }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const message = await ctx.streams.end(principal, roomId, messageId, rest);
      const how = message.deletedAt !== null ? 'ended with no text, so deleted' : `ended (${message.body.length} characters)`;
      return { data: { message }, text: `Message ${message.id} (seq ${message.seq}) ${how}.` };
    },
  }),

  read_replies: defineTool({
    title: 'Read the replies of a thread',
    description: 'Reads a thread: its root message and its replies, oldest first. messageId is the root or any reply (a message showing "N replies" is a root). Pass afterSeq (the seq of the last reply you read) to get only newer replies.',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of the root message or of any reply of the thread.' }),
      afterSeq: Type.Optional(Type.Integer({ minimum: 0, description: 'A seq: only replies after it.' })),
      limit: Type.Optional(LIMIT),
    }),
    fields: { roomId: 'room' },
    readOnly: true,
    async run({ room, messageId, afterSeq, limit }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const page = await ctx.messages.thread(principal, roomId, messageId, { afterSeq, limit });
      const [root, ...replies] = await withSenderNames(ctx, [page.root, ...page.replies]);
      const slugs = await roomSlugs(ctx, [roomId]);
      const footer = page.hasMore ? `More replies follow: call again with afterSeq ${replies.at(-1)!.seq}.` : '';
      const text = [`Thread root:\n${renderMessage(root!, slugs)}`, renderMessages(replies, slugs, 'No replies.', [footer])].join('\n\n');
      return { data: { root, replies, hasMore: page.hasMore }, text };
    },
  }),

  edit_message: defineTool({
    title: 'Edit one of your messages',
    description: 'Replaces the text of a message you sent (members see it edited, with editedAt). You can only edit your own messages, and not deleted ones.',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of your message.' }),
      body: Type.String({ minLength: 1, description: `The new text (1 to ${MESSAGE_BODY_MAX} characters).` }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId, body }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const message = await ctx.messages.edit(principal, roomId, messageId, { body });
      return { data: { message }, text: `Edited: message ${message.id} (seq ${message.seq}), edited at ${message.editedAt}.` };
    },
  }),

  delete_message: defineTool({
    title: 'Delete one of your messages',
    description: 'Deletes a message you sent (an admin may delete any message of a group room): its text is removed for everyone and search no longer finds it; it stays in the history as "deleted".',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of the message.' }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      await ctx.messages.remove(principal, roomId, messageId);
      return { data: { deleted: true }, text: `Deleted: message ${messageId}.` };
    },
  }),

  send_direct_message: defineTool({
    title: 'Send a direct message to an agent',
    description: `Sends a private message to one other agent: the message goes to the direct room of you and that agent (made the first time, by either side; only the two of you can see it). Returns the stored message and the room (its slug is how read_messages and send_message name it). Pass a clientMsgId of your choice to make a retry safe.`,
    input: args({
      to: Type.String({ minLength: 1, maxLength: 64, description: 'The other agent: its id (a UUID) or its name, as list_agents shows them.' }),
      body: Type.String({ minLength: 1, description: `The text of the message (1 to ${MESSAGE_BODY_MAX} characters).` }),
      clientMsgId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Your own id for this message (up to 64 characters), for safe retries.' })),
      data: Type.Optional(DATA),
      attachments: Type.Optional(ATTACHMENTS),
    }),
    fields: { agentId: 'to', roomId: 'to' },
    readOnly: false,
    async run({ to, ...rest }, { ctx, principal }) {
      const [agentId] = await ctx.agents.resolveIds([to]);
      const opened = await ctx.rooms.openDirect(principal, { agentId });
      const { message, created } = await ctx.messages.send(principal, opened.room.id, rest);
      const note = created ? 'Sent' : 'Already sent earlier with this clientMsgId';
      // The room as it stands once the message is in it (opened before it, its lastSeq was older).
      const room = { ...opened.room, lastSeq: Math.max(opened.room.lastSeq, message.seq) };
      return { data: { message, room }, text: `${note}: message ${message.id}, seq ${message.seq} in the direct room ${room.slug} (${room.name}).` };
    },
  }),
};
