import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startNode, type NodeProcess } from '../helpers/cluster.js';
import { createTestDatabase, TEST_JWT_SECRET, type TestDatabase } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitUntil } from '../helpers/wait.js';

// A node whose path to PostgreSQL goes silent (no reset) and comes back: the queries caught on the
// dead connections time out (query_timeout), and those connections must leave the pool, or every later
// query on them waits behind an answer that never comes and the node stays unavailable for good
// (docs/reliability.md "Chaos run").
const ready = await servicesAvailable('silent PostgreSQL cut', ['postgres']);

describe.skipIf(!ready)('a node whose PostgreSQL path goes silent', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let node: NodeProcess;
  let api: Api;
  let member: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const target = new URL(database.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(database.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    node = await startNode({ name: 'pg-cut-node', env: { DATABASE_URL: url.toString(), JWT_SECRET: TEST_JWT_SECRET, DB_POOL_MAX: '3' } });
    api = new Api(node.url);
    const admin = await newAdmin(api);
    member = await newAgent(api);
    room = await newRoom(api, admin, [member]);
  }, 120_000);
  afterAll(async () => {
    await node?.kill('SIGKILL');
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 during the cut, then drops the dead connections and serves again', async () => {
    const path = `/api/v1/rooms/${room.id}/messages`;
    // Every pooled connection in use once, so all of them are cut.
    const warm = await Promise.all([1, 2, 3].map((i) => api.post(path, { body: `before ${i}` }, { jwt: member.jwt })));
    expect(warm.map((r) => r.status)).toEqual([201, 201, 201]);
    proxy.blackhole();
    const during = await Promise.all([1, 2, 3].map((i) => api.post(path, { body: `during ${i}` }, { jwt: member.jwt })));
    expect(during.map((r) => r.status)).toEqual([503, 503, 503]);
    proxy.restore();
    await waitUntil('a send succeeds again', async () => (await api.post(path, { body: 'probe' }, { jwt: member.jwt })).status === 201, 30_000, 200);
    // Not one lucky connection: several sends in a row, each prompt.
    for (let i = 0; i < 6; i++) {
      const started = performance.now();
      const res = await api.post(path, { body: `after ${i}` }, { jwt: member.jwt });
      expect(res.status).toBe(201);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  }, 90_000);
});
