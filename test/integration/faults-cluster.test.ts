import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startPrivateCluster, type PrivateCluster } from '../helpers/cluster.js';
import { servicesAvailable, type PrivatePostgres, type PrivateRedis } from '../helpers/services.js';

// Two nodes on a private PostgreSQL and a private Redis, both restarted mid-test: every node
// degrades to 503 and a failing /readyz, then recovers by itself.
const ready = await servicesAvailable('multi-node fault tests', ['postgres-binaries', 'redis-server']);

const AGENT_LIMIT = 20;

describe.skipIf(!ready)('a cluster through PostgreSQL and Redis restarts', () => {
  let postgres: PrivatePostgres;
  let redis: PrivateRedis;
  let cluster: PrivateCluster;
  let apis: Api[];
  let admin: TestAgent;
  let member: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    cluster = await startPrivateCluster({
      nodes: 2,
      env: { RATE_LIMIT_AGENT_PER_MINUTE: String(AGENT_LIMIT) },
    });
    ({ postgres, redis } = cluster);
    apis = cluster.nodes.map((n) => new Api(n.url));
    admin = await newAdmin(apis[0]!);
    member = await newAgent(apis[1]!);
    room = await newRoom(apis[0]!, admin, [member]);
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  });

  const readyz = async (api: Api) => (await api.get('/readyz')).body;

  it('rides out a crash-like PostgreSQL restart on every node, keeping committed messages', async () => {
    const before = await sendMessage(apis[0]!, admin, room.id, 'committed before the crash');
    await postgres.stop('immediate');

    for (const api of apis) {
      expect(await readyz(api)).toEqual({ status: 'unavailable', checks: { database: 'fail', redis: 'ok' } });
      const res = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'lost?' }, { jwt: member.jwt });
      expect(res.status).toBe(503);
    }

    await postgres.start();
    await Promise.all(cluster.nodes.map((n) => n.waitReady(30_000)));
    const after = await sendMessage(apis[1]!, member, room.id, 'after the restart');
    for (const api of apis) {
      const page = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: admin.jwt });
      expect(page.body.messages.map((m: { id: string }) => m.id)).toEqual([after.id, before.id]);
    }
    expect(cluster.nodes.every((n) => n.alive())).toBe(true);
  }, 90_000);

  it('rides out a Redis restart on every node, then shares the limit again', async () => {
    await redis.kill('SIGKILL');
    for (const api of apis) {
      expect(await readyz(api)).toEqual({ status: 'unavailable', checks: { database: 'ok', redis: 'fail' } });
      const res = await api.get('/api/v1/rooms', { jwt: member.jwt });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'Rate limiter unavailable' });
    }

    await redis.start();
    await Promise.all(cluster.nodes.map((n) => n.waitReady(30_000)));
    // Counters lived in the old Redis; after the restart they are shared again from zero.
    const agent = await newAgent(apis[0]!);
    const statuses: number[] = [];
    for (let i = 0; i < AGENT_LIMIT + 2; i++) statuses.push((await apis[i % 2]!.get('/api/v1/rooms', { jwt: agent.jwt })).status);
    expect(statuses).toEqual([...Array(AGENT_LIMIT).fill(200), 429, 429]);
    expect(cluster.nodes.every((n) => n.alive())).toBe(true);
  }, 90_000);
});
