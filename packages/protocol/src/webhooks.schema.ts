import { IdString, Nullable, Timestamp } from './common.schema.js';
import { Type, Text, Uuid } from './text.js';

/** Longest endpoint URL, in characters (a URL longer than this is not a receiver's address). */
export const WEBHOOK_URL_MAX = 2048;
/** Endpoints one agent may register: each message costs one delivery per endpoint. */
export const WEBHOOK_ENDPOINTS_PER_AGENT_MAX = 10;
/** `message.attention`: a message for the agent's attention (docs/webhooks.md), instead of its `message.created`. */
/** `task.updated`: a task the agent requested or is assigned was created or moved by the other side (docs/tasks.md). */
/** `message.acked`: an agent acknowledged a message the agent sent (docs/acknowledgements.md). */
export const WEBHOOK_EVENTS = ['message.created', 'message.attention', 'message.updated', 'message.deleted', 'task.updated',
  'message.acked'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const WEBHOOK_MODES = ['offline', 'always'] as const;
export type WebhookMode = (typeof WEBHOOK_MODES)[number];
/** Entries of the deliveries log: the newest, by default and at most. */
export const DELIVERIES_LIMITS = { default: 50, max: 100 };

const EventSchema = Type.Union(WEBHOOK_EVENTS.map((e) => Type.Literal(e)));
const ModeSchema = Type.Union(WEBHOOK_MODES.map((m) => Type.Literal(m)), {
  description: 'offline (default): delivered only when the agent had no live WebSocket connection anywhere when the message was committed; always: every message',
});

export const CreateWebhookInput = Type.Object(
  {
    url: Text({ minLength: 1, maxLength: WEBHOOK_URL_MAX, description: 'http or https; must not resolve to a loopback, private, link-local or unspecified address' }),
    events: Type.Optional(Type.Array(EventSchema, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true, description: 'Defaults to ["message.created"]. At most one delivery per message: message.attention when the message is for the agent\'s attention and it is listed, else message.created when listed' })),
    mode: Type.Optional(ModeSchema),
  },
  { additionalProperties: true },
);

const webhookFields = {
  id: IdString(),
  agentId: IdString(),
  url: Type.String(),
  events: Type.Array(EventSchema),
  mode: ModeSchema,
  createdAt: Timestamp(),
  disabledAt: Nullable(Timestamp('When the endpoint was disabled after 20 failed deliveries in a row')),
};

export const WebhookSchema = Type.Object(webhookFields, { title: 'Webhook' });

export const CreatedWebhookSchema = Type.Object(
  { ...webhookFields, secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$', description: 'The signing secret (Standard Webhooks): shown here once, never again' }) },
  { title: 'CreatedWebhook' },
);

export const WebhookListSchema = Type.Object({ webhooks: Type.Array(WebhookSchema) }, { title: 'WebhookList' });

export const DeliverySchema = Type.Object(
  {
    id: IdString('Also the webhook-id header, the same on every attempt'),
    event: EventSchema,
    messageId: IdString(),
    attempt: Type.Integer({ minimum: 0, description: 'Attempts made so far' }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    error: Nullable(Type.String({ description: 'The last failure' })),
    createdAt: Timestamp(),
    deliveredAt: Nullable(Timestamp()),
  },
  { title: 'WebhookDelivery' },
);

export const DeliveryListSchema = Type.Object({ deliveries: Type.Array(DeliverySchema, { description: 'Newest first' }) }, { title: 'WebhookDeliveryList' });

export const WebhookParams = Type.Object({ id: Uuid({ description: 'Agent id' }), webhookId: Uuid({ description: 'Webhook id' }) });

export const DeliveriesQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DELIVERIES_LIMITS.max, default: DELIVERIES_LIMITS.default })),
});
