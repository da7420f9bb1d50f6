import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage, type Api, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startTwoNodeRoom, type TwoNodeRoom } from '../helpers/two-nodes.js';
import { REDIS_TEST_URL } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// docs/catch-up.md: "a message committed on node B wakes a waiter on node A" (through the cluster bus,
// `messages.committed`, notified once per turn of B's event loop).

const available = await servicesAvailable('inbox across nodes', ['redis']);

describe.runIf(available)('GET /api/v1/inbox?wait= across two nodes', () => {
  let cluster: TwoNodeRoom;
  let onA: Api;
  let onB: Api;
  let reader: TestAgent;
  let writer: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    // Two nodes on one database (the suite's engine) and the test Redis.
    cluster = await startTwoNodeRoom();
    ({ onA, onB, reader, writer, room } = cluster);
  });
  afterAll(() => cluster?.close());

  it('a message committed on node B answers a request held on node A at once', async () => {
    const held = onA.get('/api/v1/inbox?wait=20', { jwt: reader.jwt });
    // The request reaches node A and finds the inbox empty before the message exists.
    await waitUntil('the request held on node A', () => cluster.nodes.nodes[0]!.app.ctx.inboxWaiters.size === 1);
    const sentAt = Date.now();
    const sent = await sendMessage(onB, writer, room.id, 'from node B');
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ messages: [{ id: sent.id, body: 'from node B', seq: sent.seq }], unreadTotal: 1, hasMore: false });
    // Woken, not answered at the end of the wait: well within the 20 s.
    expect(Date.now() - sentAt).toBeLessThan(5_000);
  });

  it('only a node holding an inbox request receives the other nodes\' commits (docs/scale-out.md)', async () => {
    const redis = new Redis(REDIS_TEST_URL);
    try {
      const channel = `${cluster.nodes.nodes[0]!.app.ctx.config.redisKeyPrefix}bus:messages.committed`;
      const held = onA.get('/api/v1/inbox?wait=20', { jwt: writer.jwt });
      await waitUntil('the request held on node A', () => cluster.nodes.nodes[0]!.app.ctx.inboxWaiters.size === 1);
      // Node A subscribed before it read the inbox; node B, holding no request, did not.
      await waitUntil('node A follows the commits', async () => ((await redis.pubsub('NUMSUB', channel)) as [string, number])[1] === 1);
      expect(cluster.nodes.nodes[1]!.app.ctx.inboxWaiters.size).toBe(0);
      const sent = await sendMessage(onB, reader, room.id, 'for the writer');
      expect((await held).body).toMatchObject({ messages: [{ id: sent.id }] });
    } finally {
      redis.disconnect();
    }
  });
});
