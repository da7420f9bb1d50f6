import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { insertEndpoint } from '../../src/core/webhooks/webhooks.store.js';
import { Api, newAdmin, newAgent, newRoom, scopedSession, sendMessage, type TestAgent } from '../helpers/api.js';
import { createTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady } from '../helpers/ws.js';

// docs/webhooks.md, with a real receiver on loopback (private targets allowed in these servers)
// and a short retry schedule: 1 s, then 1 s, then failed (3 attempts in all).

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SHORT_SCHEDULE = { retryScheduleSeconds: [1, 1], allowPrivateTargets: true };
/** Longer than one poll of the worker (1 s) and one retry: what "never delivered" waits for. */
const QUIET_MS = 2_500;

async function register(api: Api, owner: TestAgent, url: string, extra: Record<string, unknown> = {}, as: TestAgent = owner) {
  const res = await api.post(`/api/v1/agents/${owner.id}/webhooks`, { url, ...extra }, { jwt: as.jwt });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; secret: string; mode: string; events: string[] };
}

const deliveriesOf = async (api: Api, owner: TestAgent, webhookId: string, as: TestAgent = owner) => {
  const res = await api.get(`/api/v1/agents/${owner.id}/webhooks/${webhookId}/deliveries`, { jwt: as.jwt });
  expect(res.status).toBe(200);
  return res.body.deliveries as { id: string; messageId: string; attempt: number; status: string; error: string | null; deliveredAt: string | null }[];
};

describe('webhook endpoints: registration, listing, deletion, deliveries log', () => {
  const t = useTestServer({ config: { webhooks: SHORT_SCHEDULE } });
  let receiver: WebhookReceiver;
  let admin: TestAgent;
  let owner: TestAgent;
  let other: TestAgent;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    admin = await newAdmin(t.api);
    [owner, other] = [await newAgent(t.api), await newAgent(t.api)];
  });
  afterAll(() => receiver.close());

  it('201 with the secret once; defaults events ["message.created"] and mode offline; the listing has no secret', async () => {
    const res = await t.api.post(`/api/v1/agents/${owner.id}/webhooks`, { url: `${receiver.url}/hook` }, { jwt: owner.jwt });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String), agentId: owner.id, url: `${receiver.url}/hook`, events: ['message.created'], mode: 'offline',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+={0,2}$/), createdAt: expect.stringMatching(ISO), disabledAt: null,
    });
    const listed = await t.api.get(`/api/v1/agents/${owner.id}/webhooks`, { jwt: owner.jwt });
    expect(listed.status).toBe(200);
    const { secret: _secret, ...shown } = res.body;
    expect(listed.body).toEqual({ webhooks: [shown] });
    expect(JSON.stringify(listed.body)).not.toContain(res.body.secret);
    // An admin manages any agent's endpoints.
    const byAdmin = await t.api.post(`/api/v1/agents/${owner.id}/webhooks`, { url: receiver.url, mode: 'always', events: ['message.created'] }, { jwt: admin.jwt });
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body).toMatchObject({ agentId: owner.id, mode: 'always' });
    expect(byAdmin.body.secret).not.toBe(res.body.secret);
    expect((await t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${byAdmin.body.id}`, { jwt: admin.jwt })).status).toBe(204);
  });

  it('401 without a JWT, 403 for another agent, 404 for an unknown agent or webhook, on all four routes', async () => {
    const hook = await register(t.api, owner, receiver.url);
    const base = `/api/v1/agents/${owner.id}/webhooks`;
    const calls = (jwt?: string) => [
      t.api.post(base, { url: receiver.url }, { jwt }),
      t.api.get(base, { jwt }),
      t.api.delete(`${base}/${hook.id}`, { jwt }),
      t.api.get(`${base}/${hook.id}/deliveries`, { jwt }),
    ];
    for (const res of await Promise.all(calls(undefined))) expect(res.status).toBe(401);
    for (const res of await Promise.all(calls(other.jwt))) {
      expect(res.status).toBe(403);
      expect(res.body.error).toEqual(expect.any(String));
    }
    const unknownAgent = '00000000-0000-4000-8000-000000000000';
    expect((await t.api.get(`/api/v1/agents/${unknownAgent}/webhooks`, { jwt: admin.jwt })).status).toBe(404);
    expect((await t.api.post(`/api/v1/agents/${unknownAgent}/webhooks`, { url: receiver.url }, { jwt: admin.jwt })).status).toBe(404);
    expect((await t.api.delete(`${base}/${unknownAgent}`, { jwt: owner.jwt })).status).toBe(404);
    expect((await t.api.get(`${base}/${unknownAgent}/deliveries`, { jwt: owner.jwt })).status).toBe(404);
    // Another agent's webhook id under this agent's path is unknown here.
    const others = await register(t.api, other, receiver.url);
    expect((await t.api.get(`${base}/${others.id}/deliveries`, { jwt: owner.jwt })).status).toBe(404);
    expect((await t.api.delete(`${base}/${hook.id}`, { jwt: owner.jwt })).status).toBe(204);
    expect((await t.api.delete(`${base}/${hook.id}`, { jwt: owner.jwt })).status).toBe(404);
  });

  it('400 with details for a bad url, events or mode', async () => {
    const base = `/api/v1/agents/${owner.id}/webhooks`;
    const bad = async (body: unknown) => {
      const res = await t.api.post(base, body, { jwt: owner.jwt });
      expect(res.status, JSON.stringify(body)).toBe(400);
      return res.body.details as Record<string, string>;
    };
    expect(await bad({})).toHaveProperty('url');
    expect(await bad({ url: 'ftp://example.com/hook' })).toHaveProperty('url');
    expect(await bad({ url: 'not a url' })).toHaveProperty('url');
    expect(await bad({ url: `https://example.com/${'a'.repeat(2100)}` })).toHaveProperty('url');
    expect(await bad({ url: receiver.url, mode: 'sometimes' })).toHaveProperty('mode');
    expect(await bad({ url: receiver.url, events: ['message.removed'] })).toHaveProperty('events[0]');
    expect(await bad({ url: receiver.url, events: [] })).toHaveProperty('events');
    expect((await t.api.get(`${base}/${'0'.repeat(8)}/deliveries`, { jwt: owner.jwt })).status).toBe(400);
  });

  it('at most 10 endpoints per agent: the 11th is 409', async () => {
    const agent = await newAgent(t.api);
    for (let i = 0; i < 10; i++) await register(t.api, agent, `${receiver.url}/${i}`);
    const res = await t.api.post(`/api/v1/agents/${agent.id}/webhooks`, { url: receiver.url }, { jwt: agent.jwt });
    expect(res.status).toBe(409);
    expect((await t.api.get(`/api/v1/agents/${agent.id}/webhooks`, { jwt: agent.jwt })).body.webhooks).toHaveLength(10);
  });
});

describe('webhook deliveries', () => {
  const t = useTestServer({ config: { webhooks: SHORT_SCHEDULE } });
  let receiver: WebhookReceiver;
  let admin: TestAgent;
  let owner: TestAgent;
  let roomId: string;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    admin = await newAdmin(t.api);
    owner = await newAgent(t.api);
    roomId = (await newRoom(t.api, admin, [owner])).id;
  });
  afterAll(() => receiver.close());
  afterEach(async () => {
    // Each test starts with no endpoint and a receiver that answers 200.
    const { webhooks } = (await t.api.get(`/api/v1/agents/${owner.id}/webhooks`, { jwt: owner.jwt })).body as { webhooks: { id: string }[] };
    for (const w of webhooks) await t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${w.id}`, { jwt: owner.jwt });
    receiver.respond = () => 200;
    receiver.received.length = 0;
  });

  it('a message from someone else is POSTed, signed per Standard Webhooks; the log says delivered', async () => {
    const hook = await register(t.api, owner, `${receiver.url}/in`, { mode: 'always' });
    const sent = await sendMessage(t.api, admin, roomId, 'hello hook');
    await waitUntil('the delivery', () => receiver.received.length === 1);
    const [request] = receiver.received;
    expect(request!.path).toBe('/in');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    const payload = new Webhook(hook.secret).verify(request!.body, {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    });
    expect(payload).toEqual({
      type: 'message.created',
      timestamp: expect.stringMatching(ISO),
      data: { message: { id: sent.id, roomId, senderId: admin.id, body: 'hello hook', createdAt: sent.createdAt, seq: sent.seq, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null } },
    });
    // Another secret does not verify it.
    expect(() => new Webhook(`whsec_${Buffer.from('x'.repeat(24)).toString('base64')}`).verify(request!.body, request!.headers as Record<string, string>)).toThrow();

    await waitUntil('the log to say delivered', async () => (await deliveriesOf(t.api, owner, hook.id))[0]?.status === 'delivered');
    const [entry] = await deliveriesOf(t.api, owner, hook.id);
    expect(entry).toEqual({
      id: request!.id, event: 'message.created', messageId: sent.id, attempt: 1, status: 'delivered', error: null,
      createdAt: expect.stringMatching(ISO), deliveredAt: expect.stringMatching(ISO),
    });
  });

  it('the agent\'s own messages, and rooms it is not in, are not delivered', async () => {
    const hook = await register(t.api, owner, receiver.url, { mode: 'always' });
    const elsewhere = (await newRoom(t.api, admin, [])).id;
    await sendMessage(t.api, owner, roomId, 'mine');
    await sendMessage(t.api, admin, elsewhere, 'not my room');
    const marker = await sendMessage(t.api, admin, roomId, 'marker');
    await waitUntil('the marker', () => receiver.received.length >= 1);
    // The wrong deliveries were committed before the marker: claimed in the same poll, they would be in by now.
    await waitToProveAbsence(300);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.message.id)).toEqual([marker.id]);
    expect((await deliveriesOf(t.api, owner, hook.id)).map((d) => d.messageId)).toEqual([marker.id]);
  });

  it('failed attempts are retried on the schedule with the same webhook-id; the log counts them', async () => {
    const hook = await register(t.api, owner, receiver.url, { mode: 'always' });
    receiver.respond = (_request, nth) => (nth <= 2 ? 500 : 204);
    const sent = await sendMessage(t.api, admin, roomId, 'retry me');
    await waitUntil('three attempts', () => receiver.received.length === 3, 15_000);
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(1);
    // The body is the same on every attempt; each attempt is signed with its own timestamp.
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
    for (const r of receiver.received) new Webhook(hook.secret).verify(r.body, r.headers as Record<string, string>);
    await waitUntil('delivered', async () => (await deliveriesOf(t.api, owner, hook.id))[0]?.status === 'delivered');
    expect(await deliveriesOf(t.api, owner, hook.id)).toEqual([expect.objectContaining({ id: receiver.received[0]!.id, messageId: sent.id, attempt: 3, status: 'delivered', error: null })]);
    const metrics = (await t.api.get('/metrics')).body as string;
    expect(metrics).toMatch(/service_webhook_deliveries_total\{outcome="retry"\} [1-9]/);
    expect(metrics).toMatch(/service_webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
  });

  it('after 1 + the schedule\'s length failures the delivery is failed, with the last error; redirects are not followed', async () => {
    const hook = await register(t.api, owner, receiver.url, { mode: 'always' });
    receiver.respond = (_request, nth) => (nth < 3 ? 503 : 302);
    await sendMessage(t.api, admin, roomId, 'never accepted');
    await waitUntil('failed', async () => (await deliveriesOf(t.api, owner, hook.id))[0]?.status === 'failed', 15_000);
    const [entry] = await deliveriesOf(t.api, owner, hook.id);
    expect(entry).toMatchObject({ attempt: 3, status: 'failed', error: expect.stringContaining('302'), deliveredAt: null });
    // The 302's Location was not requested.
    expect(receiver.received.map((r) => r.path)).toEqual(['/', '/', '/']);
    // A fourth attempt would come within the schedule's 1 s and a poll.
    await waitToProveAbsence(1_500);
    expect(receiver.received).toHaveLength(3);
  });

  it('offline mode: nothing for a message committed while the agent had a live socket, ever; delivered once it has none', async () => {
    const hook = await register(t.api, owner, receiver.url);
    expect(hook.mode).toBe('offline');
    const { socket } = await connectReady(t.server.url, owner.jwt);
    const whileOnline = await sendMessage(t.api, admin, roomId, 'while online');
    socket.disconnect();
    await waitUntil('the agent offline', async () => (await t.server.app.ctx.presence.onlineAgents([owner.id])).size === 0);
    const whileOffline = await sendMessage(t.api, admin, roomId, 'while offline');
    await waitUntil('the offline delivery', () => receiver.received.length >= 1);
    await waitToProveAbsence(QUIET_MS);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.message.id)).toEqual([whileOffline.id]);
    expect((await deliveriesOf(t.api, owner, hook.id)).map((d) => d.messageId)).not.toContain(whileOnline.id);
  });

  it('always mode delivers while the agent is connected', async () => {
    await register(t.api, owner, receiver.url, { mode: 'always' });
    const { socket } = await connectReady(t.server.url, owner.jwt);
    try {
      const sent = await sendMessage(t.api, admin, roomId, 'connected anyway');
      await waitUntil('the delivery', () => receiver.received.length === 1);
      expect(JSON.parse(receiver.received[0]!.body).data.message.id).toBe(sent.id);
    } finally {
      socket.disconnect();
    }
  });

  it('a disabled agent gets no deliveries', async () => {
    const hook = await register(t.api, owner, receiver.url, { mode: 'always' });
    expect((await t.api.post(`/api/v1/agents/${owner.id}/disable`, {}, { jwt: admin.jwt })).status).toBe(200);
    try {
      await sendMessage(t.api, admin, roomId, 'to a disabled agent');
      await waitToProveAbsence(QUIET_MS);
      expect(receiver.received).toHaveLength(0);
    } finally {
      expect((await t.api.post(`/api/v1/agents/${owner.id}/enable`, {}, { jwt: admin.jwt })).status).toBe(200);
    }
    expect(await deliveriesOf(t.api, owner, hook.id, admin)).toEqual([]);
  });

  it('an endpoint keeps the room restriction of the JWT that created it', async () => {
    // Stored as the scoped-token JWT leaves it (docs/scopes.md): only `roomId` is allowed.
    const other = (await newRoom(t.api, admin, [owner])).id;
    const db = t.server.app.ctx.database.db;
    const id = '0190f000-0000-7000-8000-000000000001';
    const secret = `whsec_${Buffer.from('s'.repeat(24)).toString('base64')}`;
    await insertEndpoint(db, { id, agentId: owner.id, url: receiver.url, events: ['message.created'], mode: 'always', secret, rooms: [roomId], createdAt: new Date().toISOString(), disabledAt: null });
    await sendMessage(t.api, admin, other, 'outside the restriction');
    const inside = await sendMessage(t.api, admin, roomId, 'inside');
    await waitUntil('the delivery', () => receiver.received.length >= 1);
    // The one outside was committed first: claimed in the same poll, it would be in by now.
    await waitToProveAbsence(300);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.message.id)).toEqual([inside.id]);
  });
});

describe('an endpoint whose last 20 deliveries all failed is disabled', () => {
  // WEBHOOK_RETRY_SCHEDULE=none: one attempt per delivery.
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [], allowPrivateTargets: true } } });

  it('disabledAt is set after the 20th failure and nothing more is delivered', async () => {
    const receiver = await startWebhookReceiver();
    try {
      receiver.respond = () => 500;
      const admin = await newAdmin(t.api);
      const owner = await newAgent(t.api);
      const roomId = (await newRoom(t.api, admin, [owner])).id;
      const hook = await register(t.api, owner, receiver.url, { mode: 'always' });
      for (let i = 0; i < 19; i++) await sendMessage(t.api, admin, roomId, `fail ${i}`);
      await waitUntil('19 failures', async () => (await deliveriesOf(t.api, owner, hook.id)).filter((d) => d.status === 'failed').length === 19);
      const listed = async () => (await t.api.get(`/api/v1/agents/${owner.id}/webhooks`, { jwt: owner.jwt })).body.webhooks[0];
      expect((await listed()).disabledAt).toBeNull();
      await sendMessage(t.api, admin, roomId, 'the 20th');
      await waitUntil('the endpoint disabled', async () => (await listed()).disabledAt !== null);
      expect((await listed()).disabledAt).toMatch(ISO);
      const attempts = receiver.received.length;
      expect(attempts).toBe(20);
      await sendMessage(t.api, admin, roomId, 'after');
      await waitToProveAbsence(QUIET_MS);
      expect(receiver.received).toHaveLength(attempts);
      expect(await deliveriesOf(t.api, owner, hook.id)).toHaveLength(20);
    } finally {
      await receiver.close();
    }
  });
});

describe('SSRF guard with the default configuration', () => {
  const t = useTestServer();
  let owner: TestAgent;
  beforeAll(async () => {
    owner = await newAgent(t.api);
  });

  it.each([
    'http://127.0.0.1:9/hook', 'http://10.0.0.1/hook', 'http://[::1]:8080/', 'http://169.254.169.254/latest/meta-data/',
    'http://localhost:3000/', 'https://192.168.1.10/', 'http://172.16.5.4/', 'http://100.64.0.1/', 'http://0.0.0.0/',
    'http://[::ffff:127.0.0.1]/', 'http://[fe80::1]/', 'http://[fc00::1]/', 'http://2130706433/',
  ])('refuses %s with 400 details.url', async (url) => {
    const res = await t.api.post(`/api/v1/agents/${owner.id}/webhooks`, { url }, { jwt: owner.jwt });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ url: expect.stringMatching(/loopback, private, link-local or unspecified/) });
  });

  it('refuses at delivery too: an endpoint that targets loopback ends failed, nothing is sent', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const admin = await newAdmin(t.api);
      const roomId = (await newRoom(t.api, admin, [owner])).id;
      // Registered behind the guard's back (as if the name had resolved elsewhere at creation).
      const id = '0190f000-0000-7000-8000-000000000002';
      await insertEndpoint(t.server.app.ctx.database.db, {
        id, agentId: owner.id, url: receiver.url, events: ['message.created'], mode: 'always', secret: `whsec_${Buffer.from('k'.repeat(24)).toString('base64')}`,
        rooms: null, createdAt: new Date().toISOString(), disabledAt: null,
      });
      await sendMessage(t.api, admin, roomId, 'to loopback');
      await waitUntil('failed', async () => (await deliveriesOf(t.api, owner, id))[0]?.status === 'failed');
      expect((await deliveriesOf(t.api, owner, id))[0]).toMatchObject({ attempt: 1, error: expect.stringContaining('target refused') });
      expect(receiver.received).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });
});

describe('deliveries are stored: a restart resumes them', () => {
  let receiver: WebhookReceiver;
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('a delivery that failed before the restart is retried after it with the same webhook-id', async () => {
    receiver = await startWebhookReceiver();
    receiver.respond = () => 500;
    const db = await createTestDatabase();
    const config = { webhooks: { retryScheduleSeconds: [2], allowPrivateTargets: true } };
    server = await startTestServer({ db, config });
    let api = new Api(server.url);
    const admin = await newAdmin(api);
    const owner = await newAgent(api);
    const roomId = (await newRoom(api, admin, [owner])).id;
    const hook = await register(api, owner, receiver.url, { mode: 'always' });
    await sendMessage(api, admin, roomId, 'across a restart');
    await waitUntil('the first attempt', () => receiver.received.length === 1);
    // Recorded before the stop (an attempt cut short by the shutdown would be given back, uncounted).
    await waitUntil('the first attempt recorded', async () => (await deliveriesOf(api, owner, hook.id))[0]?.attempt === 1);
    await server.close({ keepDatabase: true });
    receiver.respond = () => 200;

    server = await startTestServer({ db, config });
    api = new Api(server.url);
    await waitUntil('the retry after the restart', () => receiver.received.length === 2, 15_000);
    expect(receiver.received[1]!.id).toBe(receiver.received[0]!.id);
    await waitUntil('delivered', async () => (await deliveriesOf(api, owner, hook.id))[0]?.status === 'delivered');
    expect((await deliveriesOf(api, owner, hook.id))[0]).toMatchObject({ attempt: 2, status: 'delivered' });
  });
});

describe('a token limited to rooms sees and manages only endpoints within its rooms', () => {
  const t = useTestServer({ config: { webhooks: SHORT_SCHEDULE } });
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(() => receiver.close());

  it('lists, reads the log of and deletes only endpoints limited to rooms of its own; the full JWT sees all', async () => {
    const admin = await newAdmin(t.api);
    const owner = await newAgent(t.api);
    const [x, y] = [(await newRoom(t.api, admin, [owner])).id, (await newRoom(t.api, admin, [owner])).id];
    const onlyX = await scopedSession(t.api, owner, { rooms: [x] }, admin.jwt);
    const xAndY = await scopedSession(t.api, owner, { rooms: [x, y], actions: ['webhooks:manage'] }, admin.jwt);
    const full = await register(t.api, owner, `${receiver.url}/full`, { mode: 'always' });
    const inX = await register(t.api, owner, `${receiver.url}/x`, { mode: 'always' }, { ...owner, jwt: onlyX });
    const inXY = await register(t.api, owner, `${receiver.url}/xy`, { mode: 'always' }, { ...owner, jwt: xAndY });
    const idsSeenBy = async (jwt: string) =>
      ((await t.api.get(`/api/v1/agents/${owner.id}/webhooks`, { jwt })).body.webhooks as { id: string }[]).map((w) => w.id).sort();

    expect(await idsSeenBy(owner.jwt)).toEqual([full.id, inX.id, inXY.id].sort());
    expect(await idsSeenBy(xAndY)).toEqual([inX.id, inXY.id].sort());
    expect(await idsSeenBy(onlyX)).toEqual([inX.id]);
    // An admin's token limited to rooms is held to the same rule for another agent's endpoints.
    const adminInY = await scopedSession(t.api, admin, { rooms: [y] }, admin.jwt);
    expect(await idsSeenBy(adminInY)).toEqual([]);

    // Outside the grant an endpoint is not there: 404 for its log and its deletion, and it stays.
    await sendMessage(t.api, admin, y, 'activity in y');
    await waitUntil('deliveries in y', async () => (await deliveriesOf(t.api, owner, inXY.id)).length === 1);
    for (const id of [full.id, inXY.id]) {
      const log = await t.api.get(`/api/v1/agents/${owner.id}/webhooks/${id}/deliveries`, { jwt: onlyX });
      expect(log.status, id).toBe(404);
      expect(JSON.stringify(log.body)).not.toContain('activity');
      expect((await t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${id}`, { jwt: onlyX })).status, id).toBe(404);
    }
    expect(await idsSeenBy(owner.jwt)).toEqual([full.id, inX.id, inXY.id].sort());
    expect((await t.api.get(`/api/v1/agents/${owner.id}/webhooks/${inX.id}/deliveries`, { jwt: onlyX })).status).toBe(200);

    // Within it: managed as before.
    expect((await t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${inXY.id}`, { jwt: xAndY })).status).toBe(204);
    expect((await t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${inX.id}`, { jwt: onlyX })).status).toBe(204);
    expect(await idsSeenBy(owner.jwt)).toEqual([full.id]);
    // The full JWT manages every endpoint, including those of scoped tokens.
    expect((await t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${full.id}`, { jwt: owner.jwt })).status).toBe(204);
  });
});
