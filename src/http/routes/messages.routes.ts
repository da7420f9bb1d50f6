import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import {
  AppendMessageInput, AppendResultSchema, EditMessageInput, EndMessageInput, HistoryQuerySchema, MessageParams, MessageSchema, MessagesPageSchema, SendMessageInput, RoomIdParams,
  ThreadPageSchema, ThreadQuerySchema,
} from '@agent-messaging/protocol';
import type { HistoryQuery, ThreadQuery } from '../../core/messages/messages.service.js';
import { wantsAfterSeq } from '../../core/messages/sync.js';
import { describe, SECURITY } from '../openapi.js';

// REST items name the author `senderId`, as the domain Message does; WebSocket payloads rename it.

export function messagesRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Params: { id: string }; Querystring: HistoryQuery & { afterSeq?: string } }>('/api/v1/rooms/:id/messages', {
    schema: describe({
      operationId: 'history', summary: 'Messages of a room: history newest first, or with afterSeq the catch-up oldest first (members only in strict mode)', tags: ['messages'], security: SECURITY.jwt,
      params: RoomIdParams, querystring: HistoryQuerySchema,
      success: { 200: { schema: MessagesPageSchema, description: 'Without afterSeq: {messages (newest first), nextCursor, hasMore}. With afterSeq: {messages (oldest first), lastSeq, hasMore}' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => {
    const { before, cursor, limit, afterSeq } = request.query;
    // `afterSeq`: forward catch-up, oldest first (docs/catch-up.md); otherwise history, newest first.
    if (wantsAfterSeq(request.query)) {
      const page = await ctx.messages.sync(request.principal, request.params.id, { afterSeq, before, cursor, limit });
      return { messages: page.messages, lastSeq: page.lastSeq, hasMore: page.hasMore, oldestSeq: page.oldestSeq };
    }
    const page = await ctx.messages.history(request.principal, request.params.id, { before, cursor, limit });
    return { messages: page.messages, nextCursor: page.nextCursor, hasMore: page.hasMore, oldestSeq: page.oldestSeq };
  });

  app.post<{ Params: { id: string } }>('/api/v1/rooms/:id/messages', {
    schema: describe({
      operationId: 'sendMessage', summary: 'Send a message to a room (members only)', tags: ['messages'], security: SECURITY.jwt,
      description: 'The same as the WebSocket `message:send`: stored, audited, and broadcast as `message:new`. A `clientMsgId` repeat answers 200 with the original.',
      params: RoomIdParams, body: SendMessageInput,
      success: {
        201: { schema: MessageSchema, description: 'The stored message' },
        200: { schema: MessageSchema, description: 'A clientMsgId repeat: the original message' },
      },
      errors: [401, 403, 404, 409],
    }),
  }, async (request, reply) => {
    const { message, created } = await ctx.messages.send(request.principal, request.params.id, request.body);
    // A clientMsgId repeat answers 200 with the original message; a new message is 201.
    return reply.status(created ? 201 : 200).send(message);
  });

  // Streamed messages (docs/streaming.md): the same service as WebSocket message:append / message:end.
  app.post<{ Params: { id: string; messageId: string } }>('/api/v1/rooms/:id/messages/:messageId/append', {
    schema: describe({
      operationId: 'appendMessage', summary: 'Append text to an open streamed message (its sender only)', tags: ['messages'], security: SECURITY.jwt,
      description: 'Members\' sockets get `message:delta` (merged: at most one per 40 ms per message). The body may not pass 16,384 characters (400 details.text); at most 200 appends per message per second (429). A message sent whole or ended is 409; an unknown or deleted one 404. Scoped token: messages:write.',
      params: MessageParams, body: AppendMessageInput,
      success: { 200: { schema: AppendResultSchema, description: '{length}: the body\'s length after the append, in characters' } },
      errors: [400, 401, 403, 404, 409, 429],
    }),
  }, async (request) => ctx.streams.append(request.principal, request.params.id, request.params.messageId, request.body));

  app.post<{ Params: { id: string; messageId: string } }>('/api/v1/rooms/:id/messages/:messageId/end', {
    schema: describe({
      operationId: 'endMessage', summary: 'End an open streamed message (its sender only)', tags: ['messages'], security: SECURITY.jwt,
      description: 'A given `body` replaces the text streamed so far, a given `data` is set. Members get `message:updated` (editedAt stays null); a message ended with no text at all is deleted (the answer is the tombstone, members get `message:deleted`). A message sent whole or ended is 409. Scoped token: messages:write.',
      params: MessageParams, body: EndMessageInput,
      success: { 200: { schema: MessageSchema, description: 'The message, streaming false, streamEnd "complete"' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request) => ctx.streams.end(request.principal, request.params.id, request.params.messageId, request.body ?? {}));

  app.get<{ Params: { id: string; messageId: string }; Querystring: ThreadQuery }>('/api/v1/rooms/:id/messages/:messageId/thread', {
    schema: describe({
      operationId: 'messageThread', summary: 'A thread: its root and its replies oldest first (authorised as history)', tags: ['messages'], security: SECURITY.jwt,
      description: '`:messageId` is the root or any reply of the thread. Replies with `seq > afterSeq` (default 0), `limit` 1..100 (default 50). Scoped token: messages:read.',
      params: MessageParams, querystring: ThreadQuerySchema,
      success: { 200: { schema: ThreadPageSchema, description: '{root, replies (oldest first), hasMore}' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => {
    const { afterSeq, limit } = request.query;
    return ctx.messages.thread(request.principal, request.params.id, request.params.messageId, { afterSeq, limit });
  });

  app.patch<{ Params: { id: string; messageId: string } }>('/api/v1/rooms/:id/messages/:messageId', {
    schema: describe({
      operationId: 'editMessage', summary: 'Edit a message (its sender only)', tags: ['messages'], security: SECURITY.jwt,
      description: 'The new `body`, under the rules of a send. Live sockets of the room get `message:updated`; webhooks `message.updated`. A deleted message is 404. Scoped token: messages:write.',
      params: MessageParams, body: EditMessageInput,
      success: { 200: { schema: MessageSchema, description: 'The message as it is now, with editedAt' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.messages.edit(request.principal, request.params.id, request.params.messageId, request.body));

  app.delete<{ Params: { id: string; messageId: string } }>('/api/v1/rooms/:id/messages/:messageId', {
    schema: describe({
      operationId: 'deleteMessage', summary: 'Delete a message (its sender, or an admin): it stays as a tombstone', tags: ['messages'], security: SECURITY.jwt,
      description: 'The message keeps its id, seq and editedAt; its body becomes "", mentions empty, deletedAt set; search no longer finds it. Live sockets of the room get `message:deleted`; webhooks `message.deleted`. A deleted message is 404. Scoped token: messages:write.',
      params: MessageParams,
      success: { 204: { schema: null, description: 'Deleted' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    await ctx.messages.remove(request.principal, request.params.id, request.params.messageId);
    return reply.status(204).send();
  });
}
