import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

// docs/webhooks.md, Events: at most one delivery per message and endpoint; message.attention when
// the message is for the agent's attention and the endpoint lists it, else message.created when listed.

/** Longer than one poll of the delivery worker (1 s): what "never delivered" waits for. */
const QUIET_MS = 2_500;

describe('webhooks: message.attention and message.created', () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } });
  let receiver: WebhookReceiver;
  let bob: TestAgent;
  let alice: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    const admin = await newAdmin(t.api);
    [alice, bob] = [await newAgent(t.api), await newAgent(t.api)];
    room = await newRoom(t.api, admin, [alice, bob]);
    for (const [path, events] of [['/both', ['message.created', 'message.attention']], ['/attention', ['message.attention']], ['/created', ['message.created']]] as const) {
      const res = await t.api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: `${receiver.url}${path}`, events, mode: 'always' }, { jwt: bob.jwt });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.events).toEqual(events);
    }
  });
  afterAll(() => receiver.close());

  const send = async (body: Record<string, unknown>): Promise<{ id: string }> => {
    const res = await t.api.post(`/api/v1/rooms/${room.id}/messages`, body, { jwt: alice.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  const deliveredFor = (messageId: string) => receiver.received
    .map((r) => ({ path: r.path, payload: JSON.parse(r.body) as { type: string; data: { message: { id: string } } } }))
    .filter((r) => r.payload.data.message.id === messageId)
    .map((r) => [r.path, r.payload.type])
    .sort();

  it('a mention: message.attention to endpoints that list it, message.created to the one that lists only that; one each', async () => {
    const mention = await send({ body: 'bob, look', mentions: [bob.id] });
    await waitUntil('deliveries of mention', () => deliveredFor(mention.id).length === 3);
    await waitToProveAbsence(QUIET_MS);
    expect(deliveredFor(mention.id)).toEqual([['/attention', 'message.attention'], ['/both', 'message.attention'], ['/created', 'message.created']]);
  });

  it('a plain message: message.created where listed, nothing to an endpoint that lists only message.attention', async () => {
    const plain = await send({ body: 'for everyone' });
    await waitUntil('deliveries of plain', () => deliveredFor(plain.id).length === 2);
    await waitToProveAbsence(QUIET_MS);
    expect(deliveredFor(plain.id)).toEqual([['/both', 'message.created'], ['/created', 'message.created']]);
  });

  it('a reply to one of bob\'s messages is for his attention too', async () => {
    const fromBob = await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'bob asks' }, { jwt: bob.jwt });
    const reply = await send({ body: 'alice answers', replyTo: fromBob.body.id });
    await waitUntil('deliveries of reply', () => deliveredFor(reply.id).length === 3);
    expect(deliveredFor(reply.id)).toEqual([['/attention', 'message.attention'], ['/both', 'message.attention'], ['/created', 'message.created']]);
    // bob's own message is delivered to none of his endpoints.
    expect(deliveredFor(fromBob.body.id)).toEqual([]);
  });

  it('an unknown event is 400 details.events', async () => {
    const res = await t.api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: receiver.url, events: ['message.mentioned'] }, { jwt: bob.jwt });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.details ?? {})).toEqual([expect.stringMatching(/^events/)]);
  });
});
