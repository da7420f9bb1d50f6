import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { approve } from '../helpers/oauth.js';
import { createTestDatabase, REDIS_TEST_URL, startTestServer, type TestDatabase, type TestServer } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// docs/oauth.md with several nodes: one PUBLIC_URL for all, every record in the database, and a
// grant revoked on one node closes its live /mcp requests on the other at once.
const hasServices = await servicesAvailable('OAuth across nodes', ['redis']);

const REDIRECT = 'http://127.0.0.1:8976/callback';

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const probe = createServer();
  probe.once('error', reject);
  probe.listen(0, '127.0.0.1', () => {
    const address = probe.address();
    probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
  });
});

describe.skipIf(!hasServices)('OAuth across two nodes', () => {
  let db: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let publicUrl: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    const realtimeAdapterKey = `ams-test:${randomBytes(5).toString('hex')}`;
    // Node A listens at PUBLIC_URL; node B shares it, as nodes behind one balancer do.
    a = await startTestServer({ db, config: { port, publicUrl, redisUrl: REDIS_TEST_URL }, context: { realtimeAdapterKey } });
    b = await startTestServer({ db, config: { publicUrl, redisUrl: REDIS_TEST_URL }, context: { realtimeAdapterKey } });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.close({ keepDatabase: true }), b?.close({ keepDatabase: true })]);
    await db?.drop();
  });

  it('a token got on node A works on node B; revoked on A, its held request on B closes at once', async () => {
    const api = new Api(a.url);
    const admin = await newAdmin(api);
    const agent = await newAgent(api);
    await newRoom(api, admin, [agent]);
    const registered = await fetch(`${a.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Two nodes', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL('/oauth/authorize', a.url);
    for (const [k, v] of Object.entries({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, resource: `${publicUrl}/mcp`, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' })) authorize.searchParams.set(k, v);
    const { callback } = await approve(authorize, agent.apiToken);
    // The code is exchanged on node B: every record is in the database.
    const exchanged = await fetch(`${b.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, code: callback.searchParams.get('code')!, code_verifier: verifier, redirect_uri: REDIRECT, resource: `${publicUrl}/mcp` }).toString() });
    expect(exchanged.status).toBe(200);
    const access = ((await exchanged.json()) as { access_token: string }).access_token;

    const call = (url: string, args: Record<string, unknown>) => fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${access}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fetch_inbox', arguments: args } }),
    });
    expect((await call(b.url, {})).status).toBe(200);
    const held = call(b.url, { wait_seconds: 20 }).then((r) => r.status, () => 'closed');
    await waitUntil('the request is held on node B', () => b.app.ctx.liveOAuth['live'].size > 0);
    const grant = (await api.get(`/api/v1/agents/${agent.id}/tokens?kind=oauth`, { jwt: agent.jwt })).body.tokens[0];
    expect((await api.delete(`/api/v1/agents/${agent.id}/tokens/${grant.id}`, { jwt: agent.jwt })).status).toBe(204);
    expect(await held).toBe('closed');
    expect((await call(b.url, {})).status).toBe(401);
  });
});
