import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type ApiResponse, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startNode, type NodeProcess } from '../helpers/cluster.js';
import { TEST_JWT_SECRET } from '../helpers/server.js';
import { servicesAvailable, startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// Storage and Redis outages against a real node process (so "never crash" means the process lives),
// using private PostgreSQL and Redis instances that the tests stop, kill and restart.
const withPostgres = await servicesAvailable('PostgreSQL fault tests', ['postgres-binaries']);
const withRedis = await servicesAvailable('Redis fault tests', ['redis-server']);

/** A request with its duration, so "fails fast, never hangs" is checked, not assumed. */
async function timed(call: () => Promise<ApiResponse>): Promise<ApiResponse & { ms: number }> {
  const started = performance.now();
  const res = await call();
  return { ...res, ms: performance.now() - started };
}

describe.skipIf(!withPostgres)('PostgreSQL outages', () => {
  let postgres: PrivatePostgres;
  let node: NodeProcess;
  let api: Api;
  let admin: TestAgent;
  let member: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    node = await startNode({ name: 'pg-fault-node', env: { DATABASE_URL: postgres.url, JWT_SECRET: TEST_JWT_SECRET, DB_POOL_MAX: '4' } });
    api = new Api(node.url);
    admin = await newAdmin(api);
    member = await newAgent(api);
    room = await newRoom(api, admin, [member]);
  }, 120_000);
  afterAll(async () => {
    await node?.kill('SIGKILL');
    await postgres?.destroy();
  });

  it('answers 503 while the database is down, fails readiness, and recovers by itself', async () => {
    const before = await sendMessage(api, member, room.id, 'before the outage');
    await postgres.stop('fast');

    const history = `/api/v1/rooms/${room.id}/messages`;
    const calls: [string, () => Promise<ApiResponse>][] = [
      ['history', () => api.get(history, { jwt: member.jwt })],
      ['send', () => api.post(history, { body: 'during the outage' }, { jwt: member.jwt })],
      ['list rooms', () => api.get('/rooms')],
      ['create agent', () => api.post('/api/v1/agents', { name: 'outage-agent', displayName: 'Outage', role: 'agent' })],
      ['session exchange', () => api.post('/api/v1/sessions', { apiToken: member.apiToken })],
    ];
    for (const [what, call] of calls) {
      const res = await timed(call);
      expect({ what, status: res.status, body: res.body }).toEqual({ what, status: 503, body: { error: expect.any(String) } });
      expect(res.ms).toBeLessThan(3000);
    }
    const readyz = await timed(() => api.get('/readyz'));
    expect(readyz.status).toBe(503);
    expect(readyz.body).toEqual({ status: 'unavailable', checks: { database: 'fail' } });
    expect(readyz.ms).toBeLessThan(3000);
    expect((await api.get('/healthz')).status).toBe(200); // alive, just not ready
    // Validation needs no database: a client mistake is still a 400, not a 503.
    expect((await api.post(history, { body: '' }, { jwt: member.jwt })).status).toBe(400);
    expect(node.alive()).toBe(true);

    await postgres.start();
    await node.waitReady(20_000); // the same process, no restart
    const after = await sendMessage(api, member, room.id, 'after the outage');
    const page = await api.get(history, { jwt: member.jwt });
    expect(page.status).toBe(200);
    expect(page.body.messages.map((m: { id: string }) => m.id)).toEqual([after.id, before.id]);
    expect(node.alive()).toBe(true);
  }, 90_000);

  it('gives up on a database that stops answering within seconds, and resumes when it does', async () => {
    const history = `/api/v1/rooms/${room.id}/messages`;
    await api.get(history, { jwt: member.jwt }); // a pooled connection that will hang
    await postgres.freeze();
    try {
      const res = await timed(() => api.get(history, { jwt: member.jwt }));
      expect(res.status).toBe(503);
      expect(res.ms).toBeLessThan(8000); // the pool's 6 s query timeout, not a hang
      const readyz = await timed(() => api.get('/readyz'));
      expect(readyz.body).toEqual({ status: 'unavailable', checks: { database: 'fail' } });
      expect(readyz.ms).toBeLessThan(3000);
    } finally {
      await postgres.thaw();
    }
    await node.waitReady(20_000);
    expect((await api.get(history, { jwt: member.jwt })).status).toBe(200);
    expect(node.alive()).toBe(true);
  }, 90_000);

  it('survives its pooled connections being terminated, even mid-request', async () => {
    const terminate = () =>
      postgres.query<{ ok: boolean }>(
        "select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = 'agent-messaging-service' and pid <> pg_backend_pid()",
      );
    // Warm the pool, then kill every connection it holds while it is idle.
    await Promise.all(Array.from({ length: 4 }, () => api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: member.jwt })));
    expect((await terminate()).length).toBeGreaterThan(0);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: member.jwt })).status);
    // At most a transient 503 per dead connection while the pool notices, then normal service.
    expect(statuses).toContain(200);
    const firstOk = statuses.indexOf(200);
    expect(firstOk).toBeLessThanOrEqual(4); // DB_POOL_MAX
    expect(statuses.slice(0, firstOk).every((s) => s === 503)).toBe(true);
    expect(statuses.slice(firstOk).every((s) => s === 200)).toBe(true);

    // Now terminate while sends are in flight (inside transactions): no crash, no 500, and every
    // acknowledged message is stored exactly once.
    const sends = Array.from({ length: 40 }, (_, i) => api.post(`/api/v1/rooms/${room.id}/messages`, { body: `load ${i}` }, { jwt: member.jwt }));
    await terminate();
    const results = await Promise.all(sends);
    for (const res of results) expect([201, 503]).toContain(res.status);
    const acknowledged = results.filter((r) => r.status === 201).map((r) => r.body.id as string);
    await waitUntil('service after termination', async () => (await api.get('/readyz')).status === 200, 10_000);
    const stored = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: member.jwt });
    const ids = stored.body.messages.map((m: { id: string }) => m.id);
    for (const id of acknowledged) expect(ids.filter((x: string) => x === id)).toHaveLength(1);
    expect(node.alive()).toBe(true);
  }, 90_000);
});

describe.skipIf(!withRedis)('Redis outages', () => {
  let redis: PrivateRedis;
  let node: NodeProcess;
  let api: Api;
  let dir: string;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    // SQLite storage keeps this about Redis alone.
    dir = mkdtempSync(join(tmpdir(), 'ams-redis-fault-'));
    node = await startNode({ name: 'redis-fault-node', env: { DATABASE_URL: `sqlite:${join(dir, 'ams.sqlite')}`, REDIS_URL: redis.url } });
    api = new Api(node.url);
  }, 120_000);
  afterAll(async () => {
    await node?.kill('SIGKILL');
    await redis?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reports Redis in readiness, refuses rate-limited requests with a clear 503 while it is down, and recovers', async () => {
    const admin = await newAdmin(api);
    expect((await api.get('/readyz')).body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok' } });

    await redis.kill('SIGKILL');
    const readyz = await timed(() => api.get('/readyz'));
    expect(readyz.status).toBe(503);
    expect(readyz.body).toEqual({ status: 'unavailable', checks: { database: 'ok', redis: 'fail' } });
    expect(readyz.ms).toBeLessThan(3000);
    expect((await api.get('/healthz')).status).toBe(200); // liveness does not depend on Redis
    for (const call of [() => api.get('/api/v1/agents'), () => api.get('/api/v1/rooms', { jwt: admin.jwt })]) {
      const res = await timed(call);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'Rate limiter unavailable' });
      expect(res.ms).toBeLessThan(3000);
    }
    expect(node.alive()).toBe(true);

    await redis.start();
    await node.waitReady(20_000); // ioredis reconnects by itself
    expect((await api.get('/api/v1/rooms', { jwt: admin.jwt })).status).toBe(200);
  }, 90_000);

  it('fails fast when Redis stops answering without closing connections', async () => {
    const admin = await newAdmin(api);
    await redis.kill('SIGSTOP');
    try {
      const res = await timed(() => api.get('/api/v1/rooms', { jwt: admin.jwt }));
      expect(res.status).toBe(503);
      expect(res.ms).toBeLessThan(3000); // bounded by the client's command timeout, not hanging
      const readyz = await timed(() => api.get('/readyz'));
      expect(readyz.body.checks.redis).toBe('fail');
      expect(readyz.ms).toBeLessThan(4000); // the probe's own rate-limit call, then the ping, each bounded
    } finally {
      redis.resume();
    }
    await node.waitReady(20_000);
    expect((await api.get('/api/v1/rooms', { jwt: admin.jwt })).status).toBe(200);
    expect(node.alive()).toBe(true);
  }, 90_000);
});
