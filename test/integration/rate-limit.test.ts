import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { Api, uniqueName } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ANON = 5;
const AGENT = 8;

describe('REST rate limits (small configured limits)', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(config: Partial<Config> = {}): Promise<Api> {
    server = await startTestServer({ config: { rateLimit: { anonPerMinute: ANON, agentPerMinute: AGENT }, ...config } });
    return new Api(server.url);
  }

  /** An agent with a JWT, made through the services so that no HTTP request is counted. */
  async function agentJwt(role: 'admin' | 'agent' = 'agent'): Promise<{ id: string; jwt: string; apiToken: string }> {
    const ctx = server!.app.ctx;
    const agent = await ctx.agents.create(null, { name: uniqueName(role), displayName: 'x', role });
    const token = await ctx.tokens.issue(null, agent.id, {});
    const session = await ctx.sessions.exchange({ bearer: token.token, body: undefined });
    return { id: agent.id, jwt: session.token, apiToken: token.token };
  }

  async function exceeded(): Promise<number> {
    const metric = await server!.app.ctx.metrics.registry.getSingleMetric('rate_limit_exceeded_total')!.get();
    return metric.values.reduce((sum, v) => sum + v.value, 0);
  }

  it('unauthenticated: RATE_LIMIT_ANON_PER_MINUTE per IP, then 429 with Retry-After: 60 and {error}', async () => {
    const api = await start();
    for (let i = 0; i < ANON; i++) expect((await api.get('/healthz')).status).toBe(200);
    const res = await api.get('/healthz');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: expect.any(String) });
    expect(await exceeded()).toBe(1);
    // Every route shares the IP's budget, unknown routes and writes included.
    expect((await api.get('/nope')).status).toBe(429);
    expect((await api.get('/metrics')).status).toBe(429);
    expect(await exceeded()).toBe(3);
  });

  it('a refused write changes nothing', async () => {
    const api = await start();
    for (let i = 0; i < ANON; i++) await api.get('/healthz');
    const name = uniqueName('late');
    const res = await api.post('/api/v1/agents', { name, displayName: 'x', role: 'agent' });
    expect(res.status).toBe(429);
    expect(await server!.app.ctx.agents.list(null)).not.toContainEqual(expect.objectContaining({ name }));
  });

  it('API-token exchanges count against the IP', async () => {
    const api = await start();
    const agent = await agentJwt();
    for (let i = 0; i < ANON; i++) expect((await api.post('/api/v1/sessions', { apiToken: agent.apiToken })).status).toBe(201);
    const res = await api.post('/api/v1/sessions', { apiToken: agent.apiToken });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('60');
  });

  it('a valid JWT counts against its agent (RATE_LIMIT_AGENT_PER_MINUTE), separately from the IP and from other agents', async () => {
    const api = await start();
    const [alice, bob] = [await agentJwt(), await agentJwt()];
    // Use up the IP's anonymous budget first: authenticated requests are unaffected.
    for (let i = 0; i < ANON; i++) await api.get('/healthz');
    expect((await api.get('/healthz')).status).toBe(429);

    for (let i = 0; i < AGENT; i++) expect((await api.get('/api/v1/rooms', { jwt: alice.jwt })).status, `request ${i + 1}`).toBe(200);
    const over = await api.get('/api/v1/rooms', { jwt: alice.jwt });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(over.body).toEqual({ error: expect.any(String) });
    // A new JWT for the same agent does not reset its budget.
    const again = await server!.app.ctx.sessions.exchange({ bearer: alice.apiToken, body: undefined });
    expect((await api.get('/api/v1/rooms', { jwt: again.token })).status).toBe(429);
    // Bob has his own budget.
    expect((await api.get('/api/v1/rooms', { jwt: bob.jwt })).status).toBe(200);
    expect(await exceeded()).toBe(3);
  });

  it('an invalid JWT counts against the IP, not against the agent it names', async () => {
    const api = await start();
    const agent = await agentJwt();
    const forged = `${agent.jwt.slice(0, -2)}xx`;
    const path = '/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages';
    for (let i = 0; i < ANON; i++) expect((await api.get(path, { jwt: forged })).status).toBe(401);
    expect((await api.get(path, { jwt: forged })).status).toBe(429);
    expect((await api.get(path, { jwt: agent.jwt })).status).toBe(404);
  });

  it('X-Forwarded-For is ignored unless TRUST_PROXY is set', async () => {
    const api = await start();
    for (let i = 0; i < ANON; i++) await api.get('/healthz', { headers: { 'x-forwarded-for': `10.0.0.${i}` } });
    expect((await api.get('/healthz', { headers: { 'x-forwarded-for': '10.0.0.99' } })).status).toBe(429);
  });

  it('with TRUST_PROXY, each forwarded client IP has its own budget', async () => {
    const api = await start({ trustProxy: true });
    const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
    for (let i = 0; i < ANON; i++) expect((await api.get('/healthz', from('10.0.0.1'))).status).toBe(200);
    expect((await api.get('/healthz', from('10.0.0.1'))).status).toBe(429);
    expect((await api.get('/healthz', from('10.0.0.2'))).status).toBe(200);
  });
});
