import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { conflict, forbidden, notFound, validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import type { EventPublisher } from '../events.js';
import { nowIso } from '../../store/values.js';
import { findAgentById } from '../agents/agents.store.js';
import { recordAudit } from '../audit/audit.store.js';
import { managesAgent, type Authz } from '../authz/authz.js';
import { parsePageLimit } from '../paging.js';
import type { Principal } from '../principal.js';
import { compile, parseId, requireObject } from '../validation.js';
import { checkTarget } from './ssrf-guard.js';
import { CreateWebhookInput, DELIVERIES_LIMITS, WEBHOOK_ENDPOINTS_PER_AGENT_MAX } from '@agent-messaging/protocol';
import {
  countEndpoints, deleteEndpoint, findEndpoint, insertEndpoint, listDeliveries, listEndpoints, type StoredWebhook, type Webhook, type WebhookDelivery,
} from './webhooks.store.js';

export type { Webhook, WebhookDelivery } from './webhooks.store.js';

/** The 201 of a registration: the only time the secret is shown. */
export interface CreatedWebhook extends Webhook {
  secret: string;
}

export interface WebhooksService {
  create(principal: Principal | null, agentId: unknown, input: unknown): Promise<CreatedWebhook>;
  list(principal: Principal | null, agentId: unknown): Promise<{ webhooks: Webhook[] }>;
  remove(principal: Principal | null, agentId: unknown, webhookId: unknown): Promise<void>;
  deliveries(principal: Principal | null, agentId: unknown, webhookId: unknown, query: { limit?: unknown }): Promise<{ deliveries: WebhookDelivery[] }>;
}

const createInput = compile(CreateWebhookInput);

/**
 * Whether a caller's grant covers an endpoint (docs/webhooks.md, "Scoped tokens"): a token limited
 * to rooms reaches only endpoints limited to rooms among its own (those registered with such a
 * token); an endpoint of every room, or of a room outside the grant, is not there for it (its URL
 * may hold credentials, its log shows activity in those rooms). A caller without a room limit
 * reaches every endpoint.
 */
export function endpointWithinGrant(caller: Principal, endpoint: { rooms: readonly string[] | null }): boolean {
  const granted = caller.scope?.rooms;
  if (granted === undefined) return true;
  return endpoint.rooms !== null && endpoint.rooms.every((room) => granted.includes(room));
}

/** The endpoint as the API shows it: without its room restriction (nor, as stored, its secret). */
const shown = ({ rooms: _rooms, ...webhook }: StoredWebhook): Webhook => webhook;

/** Standard Webhooks secrets: `whsec_` and base64 of random bytes (24: 192 bits). */
const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

export function createWebhooksService(deps: { db: Kysely<DB>; authz: Authz; events: EventPublisher; allowPrivateTargets: boolean }): WebhooksService {
  const { db, authz, events, allowPrivateTargets } = deps;

  /**
   * The four endpoints: the JWT of that agent or of an admin, in both modes (401 without, 403
   * otherwise); a scoped token needs `webhooks:manage`, and `admin` too for another agent's.
   */
  const owner = async (principal: Principal | null, rawAgentId: unknown): Promise<{ caller: Principal; agentId: string }> => {
    const caller = authz.requireAgent(principal, 'webhooks:manage');
    const agentId = parseId(rawAgentId, 'id');
    if (!managesAgent(caller, agentId)) throw forbidden('Only the agent itself or an admin manages its webhooks');
    if (!(await findAgentById(db, agentId))) throw notFound('Agent');
    return { caller, agentId };
  };

  return {
    async create(principal, rawAgentId, input) {
      const { caller, agentId } = await owner(principal, rawAgentId);
      const fields = createInput.parse(requireObject(input));
      const check = await checkTarget(fields.url, { allowPrivate: allowPrivateTargets });
      if (!check.ok) throw validationError({ url: check.problem });
      if ((await countEndpoints(db, agentId)) >= WEBHOOK_ENDPOINTS_PER_AGENT_MAX) {
        throw conflict(`An agent may register at most ${WEBHOOK_ENDPOINTS_PER_AGENT_MAX} webhook endpoints`);
      }
      const webhook: CreatedWebhook = {
        id: uuidv7(),
        agentId,
        url: fields.url,
        events: fields.events ?? ['message.created'],
        mode: fields.mode ?? 'offline',
        secret: newSecret(),
        createdAt: nowIso(),
        disabledAt: null,
      };
      const restriction = caller.scope?.rooms;
      const rooms = restriction === undefined ? null : restriction.map((id) => id.toLowerCase());
      await db.transaction().execute(async (trx) => {
        await insertEndpoint(trx, { ...webhook, rooms });
        await recordAudit(trx, { event: 'webhook-created', actorId: caller.agentId, subjectId: webhook.id, detail: { agentId, mode: webhook.mode } });
      });
      // Before the answer: a message sent after it, on any node, is offered to this endpoint.
      await events.publish({ type: 'webhook.created', agentId });
      return webhook;
    },

    async list(principal, rawAgentId) {
      const { caller, agentId } = await owner(principal, rawAgentId);
      return { webhooks: (await listEndpoints(db, agentId)).filter((w) => endpointWithinGrant(caller, w)).map(shown) };
    },

    async remove(principal, rawAgentId, rawWebhookId) {
      const webhookId = parseId(rawWebhookId, 'webhookId');
      const { caller, agentId } = await owner(principal, rawAgentId);
      // The deletion and its record commit together, or neither does.
      await db.transaction().execute(async (trx) => {
        if (!(await deleteEndpoint(trx, agentId, webhookId, (w) => endpointWithinGrant(caller, w)))) throw notFound('Webhook');
        await recordAudit(trx, { event: 'webhook-deleted', actorId: caller.agentId, subjectId: webhookId, detail: { agentId } });
      });
    },

    async deliveries(principal, rawAgentId, rawWebhookId, query) {
      const webhookId = parseId(rawWebhookId, 'webhookId');
      const { caller, agentId } = await owner(principal, rawAgentId);
      const limit = parsePageLimit(query.limit, DELIVERIES_LIMITS);
      const endpoint = await findEndpoint(db, agentId, webhookId);
      if (!endpoint || !endpointWithinGrant(caller, endpoint)) throw notFound('Webhook');
      return { deliveries: await listDeliveries(db, webhookId, limit) };
    },
  };
}
