import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { Api, bootstrapAdmin, newAdmin, newAgent, newRoom, uniqueName, type TestAgent } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { untilPast, waitUntil } from '../helpers/wait.js';

// docs/mcp.md: `Authorization: Bearer <JWT or API token>`; a missing, invalid, revoked or
// expired credential gets 401 with `WWW-Authenticate: Bearer`, an API token on its next request.

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

async function rawMcp(url: string, bearer?: string, method = 'POST'): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
  return fetch(`${url}/mcp`, { method, headers, body: method === 'POST' ? JSON.stringify(INITIALIZE) : undefined });
}

/** An API token of the agent, issued by the admin (returned with its prefix). */
async function issueToken(api: Api, admin: TestAgent, agentId: string, body: Record<string, unknown> = {}): Promise<{ token: string; prefix: string; id: string }> {
  const res = await api.post(`/api/v1/agents/${agentId}/tokens`, body, { jwt: admin.jwt });
  expect(res.status).toBe(201);
  return res.body;
}

const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
});
const connect = async (url: string, bearer: string): Promise<Client> => {
  const client = await connectMcp(url, bearer);
  clients.push(client);
  return client;
};

describe('/mcp authorisation (open mode)', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let agent: TestAgent;
  beforeAll(async () => {
    admin = await newAdmin(t.api);
    agent = await newAgent(t.api);
  });

  it('401 with WWW-Authenticate: Bearer for a missing, invalid or unknown credential, saying which', async () => {
    const unknownToken = `agt_${'0'.repeat(12)}_${'0'.repeat(64)}`;
    const cases: [string | undefined, RegExp][] = [
      [undefined, /^A JWT or an API token is required.*Bearer/],
      ['not-a-jwt', /^Invalid or expired token$/],
      [`${agent.jwt}x`, /^Invalid or expired token$/],
      // A well-formed API token nobody issued is invalid, as the session exchange says, not "missing".
      [unknownToken, /^Invalid or expired API token$/],
      ['agt_short', /^Invalid or expired API token$/],
    ];
    const resourceMetadata = `resource_metadata="${t.server.url}/.well-known/oauth-protected-resource/mcp"`;
    for (const [bearer, message] of cases) {
      const res = await rawMcp(t.server.url, bearer);
      expect(res.status, String(bearer)).toBe(401);
      // docs/oauth.md: the challenge names the resource's metadata, and why a credential sent was refused.
      expect(res.headers.get('www-authenticate')).toBe(bearer === undefined ? `Bearer ${resourceMetadata}` : `Bearer error="invalid_token", ${resourceMetadata}`);
      expect(await res.json(), String(bearer)).toEqual({ error: expect.stringMatching(message) });
    }
    const exchange = await t.api.post('/api/v1/sessions', { apiToken: unknownToken });
    expect(exchange).toMatchObject({ status: 401, body: { error: 'Invalid or expired API token' } });
    await expect(connectMcp(t.server.url)).rejects.toMatchObject({ code: 401 });
  });

  it('the SDK client connects with a JWT and with an API token; GET and DELETE are 405 (stateless)', async () => {
    expect((await rawMcp(t.server.url, agent.jwt)).status).toBe(200);
    for (const method of ['GET', 'DELETE']) {
      const res = await rawMcp(t.server.url, agent.apiToken, method);
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect((await rawMcp(t.server.url, undefined, method)).status).toBe(401);
    }
    const client = await connect(t.server.url, agent.apiToken);
    expect((await callTool(client, 'whoami')).data.agentId).toBe(agent.id);
  });

  it('verifies an API token once (one session issued), not on every call', async () => {
    const fresh = await newAgent(t.api);
    const issued = await issueToken(t.api, admin, fresh.id);
    const client = await connect(t.server.url, issued.token);
    for (let i = 0; i < 5; i++) expect((await callTool(client, 'whoami')).data.agentId).toBe(fresh.id);
    const sessions = (await listAudit(t.server.app.ctx.database.db, 'jwt-issued', 1000)).filter((r) => r.detail.tokenId === issued.id);
    expect(sessions).toHaveLength(1);
  });

  it('a revoked API token gets 401 on its next request, though its verification was cached', async () => {
    const issued = await issueToken(t.api, admin, agent.id);
    const client = await connect(t.server.url, issued.token);
    expect((await callTool(client, 'whoami')).isError).toBe(false);
    expect((await t.api.delete(`/api/v1/tokens/${issued.prefix}`, { jwt: admin.jwt })).status).toBe(204);
    await expect(callTool(client, 'whoami')).rejects.toMatchObject({ code: 401 });
    const res = await rawMcp(t.server.url, issued.token);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", resource_metadata="/);
  });

  it('an expired API token gets 401 once its expiresAt passes', async () => {
    const expiresAt = new Date(Date.now() + 2500);
    const issued = await issueToken(t.api, admin, agent.id, { expiresAt: expiresAt.toISOString() });
    const client = await connect(t.server.url, issued.token);
    expect((await callTool(client, 'whoami')).isError).toBe(false);
    await untilPast(expiresAt);
    await expect(callTool(client, 'whoami')).rejects.toMatchObject({ code: 401 });
  });

  it('a disabled agent\'s API token gets 401; enabled again, it works again', async () => {
    const target = await newAgent(t.api);
    const client = await connect(t.server.url, target.apiToken);
    expect((await callTool(client, 'whoami')).isError).toBe(false);
    expect((await t.api.post(`/api/v1/agents/${target.id}/disable`, {}, { jwt: admin.jwt })).status).toBe(200);
    await expect(callTool(client, 'whoami')).rejects.toMatchObject({ code: 401 });
    expect((await rawMcp(t.server.url, target.jwt)).status).toBe(401);
    expect((await t.api.post(`/api/v1/agents/${target.id}/enable`, {}, { jwt: admin.jwt })).status).toBe(200);
    expect((await callTool(client, 'whoami')).data.agentId).toBe(target.id);
  });
});

describe('/mcp in strict mode', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });
  let admin: TestAgent;
  let member: TestAgent;
  let outsider: TestAgent;
  let roomId: string;
  beforeAll(async () => {
    admin = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    member = await newAgent(t.api, { asJwt: admin.jwt });
    outsider = await newAgent(t.api, { asJwt: admin.jwt });
    roomId = (await t.api.post('/rooms', { slug: uniqueName('strict'), name: 'Strict', members: [member.id] }, { jwt: admin.jwt })).body.id;
  });

  it('a non-member reads no history (FORBIDDEN), as over REST', async () => {
    const client = await connect(t.server.url, outsider.apiToken);
    expect((await callTool(client, 'read_messages', { room: roomId })).text).toMatch(/^FORBIDDEN: /);
    expect((await t.api.get(`/api/v1/rooms/${roomId}/messages`, { jwt: outsider.jwt })).status).toBe(403);
    const allowed = await connect(t.server.url, member.apiToken);
    expect((await callTool(allowed, 'read_messages', { room: roomId })).isError).toBe(false);
  });

  it('revoking the API token ends its JWT sessions on /mcp too', async () => {
    const target = await newAgent(t.api, { asJwt: admin.jwt });
    const client = await connect(t.server.url, target.jwt);
    expect((await callTool(client, 'whoami')).isError).toBe(false);
    expect((await t.api.delete(`/api/v1/tokens/${target.prefix}`, { jwt: admin.jwt })).status).toBe(204);
    await expect(callTool(client, 'whoami')).rejects.toMatchObject({ code: 401 });
  });
});

describe('/mcp rate limit', () => {
  const t = useTestServer({ config: { rateLimit: { anonPerMinute: 1000, agentPerMinute: 12 } } });

  it('tool calls count against the agent\'s REST budget: 429 once it is spent, over REST as well', async () => {
    // Setting up spends part of the budget of the admin, not of the agent.
    const admin = await newAdmin(t.api);
    const agent = await newAgent(t.api, { asJwt: admin.jwt });
    await newRoom(t.api, admin, [agent]);
    const client = await connect(t.server.url, agent.apiToken);
    let refused: unknown = null;
    let calls = 0;
    while (refused === null && calls < 20) {
      calls++;
      await callTool(client, 'list_rooms').catch((err: unknown) => (refused = err));
    }
    expect(refused).toMatchObject({ code: 429 });
    expect(calls).toBeLessThan(12);
    expect((await t.api.get('/api/v1/rooms', { jwt: agent.jwt })).status).toBe(429);
  });
});

describe('/mcp across two nodes', () => {
  let cluster: TestNodes;
  beforeAll(async () => {
    cluster = await startTestNodes(2);
  }, 60_000);
  afterAll(() => cluster?.close());

  it('an API token revoked on node A gets 401 at its next request on node B', async () => {
    const [a, b] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]];
    const api = new Api(a.url);
    const admin = await newAdmin(api);
    const agent = await newAgent(api);
    const onB = await connect(b.url, agent.apiToken);
    expect((await callTool(onB, 'whoami')).data.agentId).toBe(agent.id);
    expect(b.app.ctx.apiTokenAuth.isVerified(agent.apiToken)).toBe(true);
    expect((await api.delete(`/api/v1/tokens/${agent.prefix}`, { jwt: admin.jwt })).status).toBe(204);
    await expect(callTool(onB, 'whoami')).rejects.toMatchObject({ code: 401 });
    // And no later than the recheck on a node that would have missed the bus message.
    await waitUntil('node B refuses', async () => (await rawMcp(b.url, agent.apiToken)).status === 401);
  });
});
