import { ClientBase, enc } from '../client-base.js';
import type { CreatedWebhook, NewWebhook, Webhook, WebhookDelivery } from '../types.js';

// Webhooks (docs/webhooks.md): the agent's own endpoints, or any agent's as an admin; the agent by its id or name.

export abstract class WebhookMethods extends ClientBase {
  /** `POST /api/v1/agents/:id/webhooks`: keep the returned `secret`, it is shown only here. */
  async createWebhook(agent: string, input: NewWebhook): Promise<CreatedWebhook> {
    return this.http.request('POST', `/api/v1/agents/${enc(await this.agentId(agent))}/webhooks`, { body: input });
  }

  async webhooks(agent: string): Promise<Webhook[]> {
    return (await this.http.request<{ webhooks: Webhook[] }>('GET', `/api/v1/agents/${enc(await this.agentId(agent))}/webhooks`)).webhooks;
  }

  async deleteWebhook(agent: string, webhookId: string): Promise<void> {
    await this.http.request('DELETE', `/api/v1/agents/${enc(await this.agentId(agent))}/webhooks/${enc(webhookId)}`);
  }

  /** The deliveries of one endpoint, newest first. */
  async webhookDeliveries(agent: string, webhookId: string, options: { limit?: number } = {}): Promise<WebhookDelivery[]> {
    const path = `/api/v1/agents/${enc(await this.agentId(agent))}/webhooks/${enc(webhookId)}/deliveries`;
    return (await this.http.request<{ deliveries: WebhookDelivery[] }>('GET', path, { query: { limit: options.limit } })).deliveries;
  }
}
