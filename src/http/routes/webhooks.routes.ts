import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import {
  AgentIdParams, CreatedWebhookSchema, CreateWebhookInput, DeliveriesQuerySchema, DeliveryListSchema, WebhookListSchema,
  WebhookParams,
} from '@agent-messaging/protocol';
import { describe, SECURITY } from '../openapi.js';

type WebhookRoute = { Params: { id: string; webhookId: string } };

// docs/webhooks.md: the JWT of the agent itself or of an admin, in both modes.
export function webhooksRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Params: { id: string } }>('/api/v1/agents/:id/webhooks', {
    schema: describe({
      operationId: 'createWebhook', summary: 'Register a webhook endpoint (the agent itself or an admin)', tags: ['webhooks'], security: SECURITY.jwt,
      description: 'The 201 is the only answer that shows the signing secret. The URL must be http or https and must not resolve to a loopback, private, link-local or unspecified address (unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true). At most 10 endpoints per agent (409 beyond).',
      params: AgentIdParams, body: CreateWebhookInput,
      success: { 201: { schema: CreatedWebhookSchema, description: 'The endpoint, with its secret' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request, reply) => {
    const created = await ctx.webhooks.create(request.principal, request.params.id, request.body);
    return reply.status(201).send(created);
  });

  app.get<{ Params: { id: string } }>('/api/v1/agents/:id/webhooks', {
    schema: describe({
      operationId: 'listWebhooks', summary: "The agent's webhook endpoints (no secrets)", tags: ['webhooks'], security: SECURITY.jwt,
      params: AgentIdParams,
      success: { 200: { schema: WebhookListSchema, description: 'The endpoints' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.webhooks.list(request.principal, request.params.id));

  app.delete<WebhookRoute>('/api/v1/agents/:id/webhooks/:webhookId', {
    schema: describe({
      operationId: 'deleteWebhook', summary: 'Delete a webhook endpoint and its deliveries', tags: ['webhooks'], security: SECURITY.jwt,
      params: WebhookParams,
      success: { 204: { schema: null, description: 'Deleted' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    await ctx.webhooks.remove(request.principal, request.params.id, request.params.webhookId);
    return reply.status(204).send();
  });

  app.get<WebhookRoute & { Querystring: { limit?: number } }>('/api/v1/agents/:id/webhooks/:webhookId/deliveries', {
    schema: describe({
      operationId: 'listWebhookDeliveries', summary: "An endpoint's deliveries, newest first", tags: ['webhooks'], security: SECURITY.jwt,
      params: WebhookParams, querystring: DeliveriesQuerySchema,
      success: { 200: { schema: DeliveryListSchema, description: 'The newest deliveries (50 by default, at most 100)' } },
      errors: [400, 401, 403, 404],
    }),
  }, async (request) => ctx.webhooks.deliveries(request.principal, request.params.id, request.params.webhookId, { limit: request.query.limit }));
}
