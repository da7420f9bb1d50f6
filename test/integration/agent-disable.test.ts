import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { AppError } from '../../src/errors.js';
import { Api, bootstrapAdmin, newAdmin, newAgent, newRoom, type TestAgent, uniqueName } from '../helpers/api.js';
import { configFor, createTestDatabase, REDIS_TEST_URL, TEST_JWT_SECRET, type TestDatabase } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { servicesAvailable } from '../helpers/services.js';
import { connect, connectReady, expectAuthFailed, record } from '../helpers/ws.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const now = (): number => Math.floor(Date.now() / 1000);

/** An HS256 JWT over a payload given as raw JSON text (so it can carry 1e400), signed with the test secret. */
function forge(payloadJson: string): string {
  const input = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')}.${Buffer.from(payloadJson).toString('base64url')}`;
  return `${input}.${createHmac('sha256', Buffer.from(TEST_JWT_SECRET, 'utf8')).update(input).digest('base64url')}`;
}
const forgeFor = (agentId: string): string => forge(JSON.stringify({ agentId, role: 'admin', iat: now(), exp: now() + 600 }));


/** A handshake refused before `agent:hello-ack`. */
async function expectHandshakeRefused(url: string, jwt: string): Promise<string> {
  const socket = connect(url, jwt);
  const hellos = record(socket, 'agent:hello-ack');
  const message = await expectAuthFailed(socket);
  expect(hellos).toEqual([]);
  return message;
}

describe('session JWTs must name an existing agent, with a bounded lifetime', () => {
  const { server, api } = useTestServer({ config: { jwtSecret: TEST_JWT_SECRET } });
  let agent: TestAgent;
  let roomId: string;
  let channelId: string;
  let postId: string;

  beforeAll(async () => {
    const admin = await newAdmin(api);
    agent = await newAgent(api);
    roomId = (await newRoom(api, admin, [agent])).id;
    const channels = await api.get('/api/v1/social/channels', { jwt: agent.jwt });
    channelId = channels.body.channels[0].id;
    const post = await api.post(`/api/v1/social/channels/${channelId}/posts`, { body: 'hello' }, { jwt: agent.jwt });
    expect(post.status).toBe(201);
    postId = post.body.id;
  });

  const writes = (jwt: string) => [
    ['social post', api.post(`/api/v1/social/channels/${channelId}/posts`, { body: 'x' }, { jwt })],
    ['reply', api.post(`/api/v1/social/posts/${postId}/replies`, { body: 'x' }, { jwt })],
    ['reaction', api.post(`/api/v1/social/posts/${postId}/reactions`, { emoji: '👍' }, { jwt })],
    ['room send', api.post(`/api/v1/rooms/${roomId}/messages`, { body: 'x' }, { jwt })],
  ] as const;

  it('accepts a forged JWT for the real agent (the secret is right: the control case)', async () => {
    const jwt = forge(JSON.stringify({ agentId: agent.id, role: 'agent', iat: now(), exp: now() + 600 }));
    const ok = { 'social post': 201, reply: 201, reaction: 200, 'room send': 201 };
    for (const [what, pending] of writes(jwt)) expect((await pending).status, what).toBe(ok[what]);
  });

  it.each([
    ['a random UUID', () => randomUUID()],
    ['a non-UUID', () => 'not-an-agent'],
  ])('answers 401 on REST and AUTH_FAILED on WebSocket for a JWT whose agentId is %s', async (_case, agentId) => {
    const jwt = forgeFor(agentId());
    for (const [what, pending] of writes(jwt)) {
      const res = await pending;
      expect(res.status, what).toBe(401);
      expect(res.body, what).toEqual({ error: expect.any(String) });
    }
    await expectHandshakeRefused(server.url, jwt);
  });

  it.each([
    ['an exp of 1e400', () => `{"agentId":"${agent.id}","role":"agent","iat":${now()},"exp":1e400}`],
    ['an exp of 9e15', () => `{"agentId":"${agent.id}","role":"agent","iat":${now()},"exp":9e15}`],
    ['an exp a day after iat', () => JSON.stringify({ agentId: agent.id, role: 'agent', iat: now(), exp: now() + 86_400 })],
    ['no iat', () => JSON.stringify({ agentId: agent.id, role: 'agent', exp: now() + 600 })],
    ['an iat of 1e400', () => `{"agentId":"${agent.id}","role":"agent","iat":1e400,"exp":${now() + 600}}`],
  ])('answers 401 for a correctly signed JWT with %s', async (_case, payload) => {
    const jwt = forge(payload());
    const res = await api.get('/api/v1/social/channels', { jwt });
    expect(res.status).toBe(401);
    await expectHandshakeRefused(server.url, jwt);
  });

  it('turns a foreign-key failure of a social write into a 401, never a 500 (the safety net behind authentication)', async () => {
    const ghost = { agentId: randomUUID(), role: 'agent' as const };
    const social = server.app.ctx.social;
    for (const attempt of [
      () => social.createPost(ghost, channelId, { body: 'x' }),
      () => social.reply(ghost, postId, { body: 'x' }),
      () => social.toggleReaction(ghost, postId, { emoji: '👍' }),
    ]) {
      const error = await attempt().then(() => null, (err: unknown) => err);
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).status).toBe(401);
    }
  });
});

describe('disabled agents, open mode', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;

  beforeAll(async () => {
    admin = await newAdmin(api);
  });

  const exchange = (agent: TestAgent) => api.post('/api/v1/sessions', { apiToken: agent.apiToken });

  it('disable and enable answer 200 with the Agent object and its disabledAt, are idempotent and audited', async () => {
    const agent = await newAgent(api);
    const disabled = await api.post(`/api/v1/agents/${agent.id}/disable`, undefined, { jwt: admin.jwt });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toEqual({ id: agent.id, name: agent.name, displayName: `Test ${agent.name}`, role: 'agent', createdAt: expect.stringMatching(ISO), disabledAt: expect.stringMatching(ISO), description: '', skills: [] });
    const listed = (await api.get('/api/v1/agents')).body.find((a: { id: string }) => a.id === agent.id);
    expect(listed).toEqual(disabled.body);
    // Again: the same state, the same disabledAt, no second audit record.
    const again = await api.post(`/api/v1/agents/${agent.id}/disable`, undefined, { jwt: admin.jwt });
    expect(again.body).toEqual(disabled.body);

    const enabled = await api.post(`/api/v1/agents/${agent.id}/enable`, undefined, { jwt: admin.jwt });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toEqual({ ...disabled.body, disabledAt: null });
    expect((await api.post(`/api/v1/agents/${agent.id}/enable`)).body).toEqual(enabled.body);

    const db = server.app.ctx.database.db;
    const disabledAudit = (await listAudit(db, 'agent-disabled')).filter((r) => r.subjectId === agent.id);
    const enabledAudit = (await listAudit(db, 'agent-enabled')).filter((r) => r.subjectId === agent.id);
    expect(disabledAudit).toEqual([expect.objectContaining({ actorId: admin.id, subjectId: agent.id })]);
    expect(enabledAudit).toEqual([expect.objectContaining({ actorId: admin.id, subjectId: agent.id })]);
  });

  it('answers 404 for an unknown agent and 400 for a non-UUID id', async () => {
    for (const action of ['disable', 'enable']) {
      const unknown = await api.post(`/api/v1/agents/${randomUUID()}/${action}`, undefined, { jwt: admin.jwt });
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ error: 'Agent not found' });
      const malformed = await api.post(`/api/v1/agents/nope/${action}`, undefined, { jwt: admin.jwt });
      expect(malformed.status).toBe(400);
      expect(malformed.body.details).toEqual({ id: 'must be a UUID' });
    }
  });

  it('a disabled agent: 403 at POST /api/v1/sessions, its JWTs 401 on REST and AUTH_FAILED at the handshake, its live sockets closed', async () => {
    const agent = await newAgent(api);
    const { socket: live } = await connectReady(server.url, agent.jwt);
    const closed = expectAuthFailed(live);
    expect((await api.get('/api/v1/social/channels', { jwt: agent.jwt })).status).toBe(200);

    expect((await api.post(`/api/v1/agents/${agent.id}/disable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    expect(await closed).toBe('This agent is disabled');

    const refused = await exchange(agent);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'This agent is disabled' });
    // A wrong token of the agent is still just a wrong token: nothing is told about the agent.
    expect((await api.post('/api/v1/sessions', { apiToken: `${agent.prefix}_${'0'.repeat(64)}` })).status).toBe(401);

    const rest = await api.get('/api/v1/social/channels', { jwt: agent.jwt });
    expect(rest.status).toBe(401);
    expect(rest.body).toEqual({ error: 'Authentication required' });
    expect(await expectHandshakeRefused(server.url, agent.jwt)).toBe('This agent is disabled');

    // Enabled again: the same API token opens sessions, and the JWTs work.
    expect((await api.post(`/api/v1/agents/${agent.id}/enable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    const session = await exchange(agent);
    expect(session.status).toBe(201);
    expect((await api.get('/api/v1/social/channels', { jwt: session.body.token })).status).toBe(200);
    expect((await api.get('/api/v1/social/channels', { jwt: agent.jwt })).status).toBe(200);
    const { socket } = await connectReady(server.url, session.body.token);
    socket.disconnect();
  });

  it('a disabled admin cannot create rooms through X-Agent-Id either', async () => {
    const other = await newAdmin(api);
    expect((await api.post(`/api/v1/agents/${other.id}/disable`)).status).toBe(200);
    const res = await api.post('/rooms', { slug: uniqueName('room'), name: 'R', members: [] }, { headers: { 'x-agent-id': other.id } });
    expect(res.status).toBe(401);
  });
});

describe('disabled agents, strict mode: admin only', () => {
  const { server, api } = useTestServer({ config: { authzMode: 'strict' } });
  let admin: TestAgent;
  let alice: TestAgent;

  beforeAll(async () => {
    // The first admin comes from outside the API, as `ams admin create` makes it.
    admin = await bootstrapAdmin(server.app.ctx.database.db, api);
    alice = await newAgent(api, { asJwt: admin.jwt });
  });

  it('refuses anonymous callers (401) and non-admins (403); an admin disables and enables', async () => {
    for (const action of ['disable', 'enable']) {
      expect((await api.post(`/api/v1/agents/${alice.id}/${action}`)).status).toBe(401);
      expect((await api.post(`/api/v1/agents/${alice.id}/${action}`, undefined, { jwt: alice.jwt })).status).toBe(403);
    }
    expect((await api.post(`/api/v1/agents/${alice.id}/disable`, undefined, { jwt: admin.jwt })).body.disabledAt).toMatch(ISO);
    expect((await api.get('/api/v1/rooms', { jwt: alice.jwt })).status).toBe(401);
    expect((await api.post(`/api/v1/agents/${alice.id}/enable`, undefined, { jwt: admin.jwt })).body.disabledAt).toBeNull();
    expect((await api.get('/api/v1/rooms', { jwt: alice.jwt })).status).toBe(200);
  });
});

const redisReady = await servicesAvailable('disabled agents across nodes', ['redis']);

describe.skipIf(!redisReady)('disabled agents on two nodes sharing one database and one Redis', () => {
  let db: TestDatabase;
  let nodeA: RunningApp;
  let nodeB: RunningApp;
  let a: Api;
  let b: Api;
  let admin: TestAgent;

  beforeAll(async () => {
    db = await createTestDatabase();
    const config = configFor(db.url, {
      redisUrl: REDIS_TEST_URL,
      redisKeyPrefix: `ams-test-${randomBytes(5).toString('hex')}:`,
      rateLimit: { anonPerMinute: 100_000, agentPerMinute: 100_000 },
    });
    const logger = pino({ level: process.env.AMS_TEST_LOG_LEVEL ?? 'silent' });
    const adapterKey = `ams-test:${randomBytes(5).toString('hex')}`;
    nodeA = await startApp(config, logger, { realtimeAdapterKey: adapterKey });
    nodeB = await startApp(config, logger, { realtimeAdapterKey: adapterKey });
    a = new Api(nodeA.url);
    b = new Api(nodeB.url);
    admin = await newAdmin(a);
  });
  afterAll(async () => {
    await Promise.all([nodeA?.close(), nodeB?.close()]);
    await db?.drop();
  });

  it('disabling on node A closes the agent’s sockets on node B; node B refuses its handshakes and its JWTs as soon as the request answered', async () => {
    const agent = await newAgent(a);
    // Node B has seen (and cached) the agent as active.
    expect((await b.get('/api/v1/social/channels', { jwt: agent.jwt })).status).toBe(200);
    const { socket: onB } = await connectReady(nodeB.url, agent.jwt);
    const closed = expectAuthFailed(onB);

    expect((await a.post(`/api/v1/agents/${agent.id}/disable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    // The cluster bus made node B forget its cached "active" before the request answered.
    expect((await b.get('/api/v1/social/channels', { jwt: agent.jwt })).status).toBe(401);
    expect(await closed).toBe('This agent is disabled');
    // A handshake is checked against the database once the socket joined its channels.
    await expectHandshakeRefused(nodeB.url, agent.jwt);
    expect((await b.post('/api/v1/sessions', { apiToken: agent.apiToken })).status).toBe(403);

    expect((await a.post(`/api/v1/agents/${agent.id}/enable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    // A refusal is never cached: node B accepts again at once.
    expect((await b.get('/api/v1/social/channels', { jwt: agent.jwt })).status).toBe(200);
  });
});
