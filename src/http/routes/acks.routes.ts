import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { AckListSchema, AckResultSchema, MessageParams } from '@agent-messaging/protocol';
import { describe, SECURITY } from '../openapi.js';

/** Acknowledgements of messages that ask for them (docs/acknowledgements.md). */
export function acksRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Params: { id: string; messageId: string } }>('/api/v1/rooms/:id/messages/:messageId/ack', {
    schema: describe({
      operationId: 'ackMessage', summary: 'Acknowledge a message that asks the caller to (ackRequired)', tags: ['messages'], security: SECURITY.jwt,
      description: 'By an agent that must acknowledge it: 200 {ackedAt}; again: the same ackedAt, and nothing announced again. The sender\'s sockets get `message:acked`, its endpoints listing it the webhook `message.acked`. 409 for any other member (one who joined after the send included) and for a message without ackRequired; a non-member 403 (404 for a direct room); an unknown or deleted message 404. Scoped token: messages:read.',
      params: MessageParams,
      success: { 200: { schema: AckResultSchema, description: 'When the caller acknowledged it' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request) => ctx.acks.ack(request.principal, request.params.id, request.params.messageId));

  app.get<{ Params: { id: string; messageId: string } }>('/api/v1/rooms/:id/messages/:messageId/acks', {
    schema: describe({
      operationId: 'listMessageAcks', summary: 'Who acknowledged a message, and who has not yet (its sender or an admin)', tags: ['messages'], security: SECURITY.jwt,
      description: '{acked: [{agentId, at}] oldest first, pending: [agentId]}; both empty for a message that asks for no acknowledgement. 403 to other members. Scoped token: messages:read.',
      params: MessageParams,
      success: { 200: { schema: AckListSchema, description: '{acked, pending}' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.acks.list(request.principal, request.params.id, request.params.messageId));
}
