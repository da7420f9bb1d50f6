import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { buildConfig } from '../../src/config/config.js';
import { migrationNames } from '../../src/store/migrations/index.js';
import { createTestDatabase } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// Separate node processes on one PostgreSQL database and one Redis, configured by environment only.
const ready = await servicesAvailable('multi-node cluster tests', ['postgres', 'redis']);

const AGENT_LIMIT = 24;

describe.skipIf(!ready)('two nodes on one PostgreSQL and one Redis', () => {
  let cluster: Cluster;
  let a: Api;
  let b: Api;

  beforeAll(async () => {
    // Both nodes start at the same moment on a fresh database: they race on the migrations too.
    cluster = await startCluster({
      nodes: 2,
      env: { RATE_LIMIT_AGENT_PER_MINUTE: String(AGENT_LIMIT), RATE_LIMIT_ANON_PER_MINUTE: '10000' },
    });
    a = new Api(cluster.nodes[0]!.url);
    b = new Api(cluster.nodes[1]!.url);
  }, 120_000);
  afterAll(() => cluster?.close());

  it('serves on node B what was created on node A, with one JWT secret for both', async () => {
    const admin = await newAdmin(a);
    const member = await newAgent(a);
    const room = await newRoom(a, admin, [member]);
    const first = await sendMessage(a, member, room.id, 'written on A');

    const agents = await b.get('/api/v1/agents');
    expect(agents.status).toBe(200);
    expect(agents.body.map((x: { id: string }) => x.id)).toEqual(expect.arrayContaining([admin.id, member.id]));
    const rooms = await b.get('/api/v1/rooms', { jwt: member.jwt });
    // The member's own message is not unread.
    expect(rooms.body.rooms).toContainEqual({ ...room, lastSeq: 1, readSeq: 0, unreadCount: 0, attentionCount: 0 });

    // A JWT issued by node A is accepted by node B; B's message lands after A's in one history.
    const second = await sendMessage(b, member, room.id, 'written on B');
    for (const api of [a, b]) {
      const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: admin.jwt });
      expect(history.status).toBe(200);
      expect(history.body.messages.map((m: { id: string; body: string }) => [m.id, m.body])).toEqual([
        [second.id, 'written on B'],
        [first.id, 'written on A'],
      ]);
    }

    // An API token issued on A is exchanged on B; a revocation on B is seen on A.
    const token = await a.post(`/api/v1/agents/${member.id}/tokens`, { scopes: {} });
    const exchanged = await b.post('/api/v1/sessions', { apiToken: token.body.token });
    expect(exchanged.status).toBe(201);
    expect((await b.delete(`/api/v1/tokens/${token.body.prefix}`)).status).toBe(204);
    expect((await a.post('/api/v1/sessions', { apiToken: token.body.token })).status).toBe(401);
    // A duplicate name is a conflict whichever node sees it.
    const duplicate = await b.post('/api/v1/agents', { name: member.name, displayName: 'again', role: 'agent' });
    expect(duplicate.status).toBe(409);
  });

  it('shares one per-agent rate limit across the nodes, under REDIS_KEY_PREFIX', async () => {
    const admin = await newAdmin(a);
    const agent = await newAgent(a);
    const room = await newRoom(a, admin, [agent]);
    const path = `/api/v1/rooms/${room.id}/messages`;

    // Alternating nodes, the agent gets AGENT_LIMIT requests in all, not AGENT_LIMIT per node.
    const statuses: number[] = [];
    for (let i = 0; i < AGENT_LIMIT; i++) statuses.push((await (i % 2 === 0 ? a : b).get(path, { jwt: agent.jwt })).status);
    expect(statuses).toEqual(Array(AGENT_LIMIT).fill(200));
    for (const api of [a, b]) {
      const refused = await api.get(path, { jwt: agent.jwt });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(refused.body).toEqual({ error: expect.any(String) });
    }
    // Another agent is not affected.
    expect((await b.get(path, { jwt: admin.jwt })).status).toBe(200);

    // The shared counter lives under this cluster's prefix.
    const redis = new Redis(cluster.redisUrl, { lazyConnect: true });
    try {
      await redis.connect();
      const keys = await redis.keys(`${cluster.redisKeyPrefix}rl:rest-agent:${agent.id}`);
      expect(keys).toHaveLength(1);
      expect(Number(await redis.get(keys[0]!))).toBeGreaterThan(AGENT_LIMIT);
    } finally {
      redis.disconnect();
    }
  });

  it('loses no acknowledged message when a node is killed (SIGKILL) under load', async () => {
    const nodeA = cluster.nodes[0]!;
    const admin = await newAdmin(b);
    // One sender per worker keeps each under the small per-agent limit of this cluster.
    const senders = await Promise.all(Array.from({ length: 8 }, () => newAgent(b)));
    const room = await newRoom(b, admin, senders);
    const acknowledged: string[] = [];
    let refused = 0;
    const worker = async (api: Api, sender: (typeof senders)[number], n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        try {
          const res = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: `${sender.name} ${i}` }, { jwt: sender.jwt });
          if (res.status === 201) acknowledged.push(res.body.id);
          else refused++;
        } catch {
          refused++; // connection refused or reset by the killed node: not acknowledged
        }
      }
    };
    const load = Promise.all(senders.map((s, i) => worker(i % 2 === 0 ? a : b, s, 15)));
    await waitUntil('some messages acknowledged', () => acknowledged.length >= 24, 30_000, 5);
    const exit = await nodeA.kill('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    await load;
    expect(refused).toBeGreaterThan(0); // the kill did land mid-load

    const stored: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? '?limit=100' : `?limit=100&before=${cursor}`;
      const page = await b.get(`/api/v1/rooms/${room.id}/messages${query}`, { jwt: admin.jwt });
      stored.push(...page.body.messages.map((m: { id: string }) => m.id));
      cursor = page.body.hasMore ? page.body.nextCursor : null;
    } while (cursor !== null);
    for (const id of acknowledged) expect(stored.filter((x) => x === id)).toHaveLength(1);
    expect(new Set(stored).size).toBe(stored.length);

    await nodeA.restart();
    const fromA = await a.get(`/api/v1/rooms/${room.id}/messages?limit=1`, { jwt: admin.jwt });
    expect(fromA.body.messages[0].id).toBe(stored[0]);
  }, 90_000);

  it('keeps serving from one node while the other stops; restarted and added nodes catch up', async () => {
    const [nodeA, nodeB] = [cluster.nodes[0]!, cluster.nodes[1]!];
    const admin = await newAdmin(a);
    const room = await newRoom(a, admin);

    const exit = await nodeB.stop();
    expect(exit).toEqual({ code: 0, signal: null }); // graceful shutdown on SIGTERM
    const during = await sendMessage(a, admin, room.id, 'while B was down');

    await nodeB.restart();
    expect(nodeB.alive()).toBe(true);
    const history = await b.get(`/api/v1/rooms/${room.id}/messages`, { jwt: admin.jwt });
    expect(history.body.messages.map((m: { id: string }) => m.id)).toEqual([during.id]);
    expect(nodeA.alive()).toBe(true);

    // A node added later joins the same data.
    const nodeC = await cluster.addNode();
    const fromC = await new Api(nodeC.url).get(`/api/v1/rooms/${room.id}/messages`, { jwt: admin.jwt });
    expect(fromC.body.messages.map((m: { id: string }) => m.id)).toEqual([during.id]);
  }, 90_000);
});

describe.skipIf(!ready)('startup migrations', () => {
  it('lets three nodes start at once on an empty database, migrating it exactly once', async () => {
    const database = await createTestDatabase('postgres');
    const cluster = await startCluster({ nodes: 3, database });
    try {
      for (const node of cluster.nodes) expect((await fetch(`${node.url}/readyz`)).status).toBe(200);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const migrations = await client.query<{ name: string }>('select name from kysely_migration order by name');
        expect(migrations.rows.map((r) => r.name)).toEqual(migrationNames('postgres'));
        const channels = await client.query<{ slug: string }>('select slug from social_channels');
        expect(channels.rows).toEqual([{ slug: 'general' }]);
      } finally {
        await client.end();
      }
    } finally {
      await cluster.close();
      await database.drop();
    }
  }, 120_000);
});

describe('cluster configuration', () => {
  const pgUrl = 'postgres://ams@db.internal:5432/ams';

  it('requires one JWT_SECRET for all nodes with PostgreSQL', () => {
    expect(() => buildConfig({ DATABASE_URL: pgUrl })).toThrow(/JWT_SECRET is required/);
    const config = buildConfig({ DATABASE_URL: pgUrl, JWT_SECRET: 'x'.repeat(32), DB_POOL_MAX: '25' });
    expect(config.database).toEqual({ kind: 'postgres', url: pgUrl, poolMax: 25 });
  });

  it('prefixes Redis keys with REDIS_KEY_PREFIX, "ams:" by default', () => {
    expect(buildConfig({}).redisKeyPrefix).toBe('ams:');
    expect(buildConfig({ REDIS_KEY_PREFIX: 'tenant-{a}:' }).redisKeyPrefix).toBe('tenant-{a}:');
    for (const bad of ['has space', 'x'.repeat(65), 'ünïcode']) {
      expect(() => buildConfig({ REDIS_KEY_PREFIX: bad })).toThrow(/^REDIS_KEY_PREFIX must be/);
    }
  });
});
