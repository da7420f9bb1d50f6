import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { roomChannel } from '../../src/realtime/protocol.js';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { configFor, createTestDatabase, REDIS_TEST_URL, startTestServer, type TestDatabase, type TestServer } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// Work follows members under churn (docs/scale-out.md, "Fan-out"): a member that leaves and joins
// again and again, and an agent of hundreds of rooms whose sockets come and go at once, leave no
// subscription behind and lose no message. Two nodes in this process on a channel prefix of their own.
const ready = await servicesAvailable('sharded Socket.IO adapter under churn', ['postgres', 'redis']);

describe.skipIf(!ready)('the sharded adapter under churn', () => {
  let db: TestDatabase;
  let nodeA: TestServer;
  let nodeB: TestServer;
  let redis: Redis;
  let onA: Api;
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  let key: string;
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    key = `ams-test:${randomBytes(5).toString('hex')}`;
    // The churn goes faster than the default 30 events per second of a connection.
    const ws = { ...configFor(db.url).ws, eventsPerSecond: 1000 };
    nodeA = await startTestServer({ db, config: { redisUrl: REDIS_TEST_URL, ws }, context: { realtimeAdapterKey: key } });
    nodeB = await startTestServer({ db, config: { redisUrl: REDIS_TEST_URL, ws }, context: { realtimeAdapterKey: key } });
    redis = new Redis(REDIS_TEST_URL);
    onA = new Api(nodeA.url);
    admin = await newAdmin(onA);
    [alice, bob] = await Promise.all([newAgent(onA), newAgent(onA)]);
    room = await newRoom(onA, admin, [alice, bob]);
  }, 120_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.disconnect();
  });
  afterAll(async () => {
    for (const s of sockets) s.disconnect();
    redis?.disconnect();
    await nodeB?.close({ keepDatabase: true });
    await nodeA?.close({ keepDatabase: true });
    await db?.drop();
  });

  const open = async (node: TestServer, agent: TestAgent): Promise<{ socket: ClientSocket; hello: { rooms: string[] } }> => {
    const opened = await connectReady(node.url, agent.jwt);
    sockets.push(opened.socket);
    return opened;
  };
  const channelOf = (roomId: string): string => `${key}#/agents#${roomChannel(roomId)}#`;
  const subscribers = async (roomId: string): Promise<number> => {
    const [, count] = (await redis.call('PUBSUB', 'SHARDNUMSUB', channelOf(roomId))) as [string, number];
    return Number(count);
  };
  /** Every room or agent shard channel of the test's adapters that some node subscribes (not the adapters' own). */
  const channels = async (): Promise<string[]> =>
    ((await redis.call('PUBSUB', 'SHARDCHANNELS', `${key}#/agents#*`)) as string[]).filter((c) => c.includes(`#${roomChannel('')}`) || c.includes('#agent:'));

  it('a member that leaves and joins 30 times while messages flow: subscribed exactly while in, nothing lost, nothing left behind', async () => {
    const aliceOnA = (await open(nodeA, alice)).socket;
    const bobOnB = (await open(nodeB, bob)).socket;
    const received: Payload[] = [];
    bobOnB.on('message:new', (m: Payload) => void received.push(m));
    const sent: { seq: number; body: string; whileIn: boolean }[] = [];
    for (let round = 0; round < 30; round++) {
      expect(await emitWithAck(bobOnB, 'room:leave', { roomId: room.id })).toEqual({ ok: true });
      await waitUntil('node B unsubscribed', async () => (await subscribers(room.id)) === 1);
      const out = await sendMessage(onA, admin, room.id, `out ${round}`);
      sent.push({ seq: out.seq, body: `out ${round}`, whileIn: false });
      expect(await emitWithAck(bobOnB, 'room:join', { roomId: room.id })).toEqual({ ok: true });
      // Subscribed before the join answered: the next message reaches bob on node B.
      expect(await subscribers(room.id)).toBe(2);
      const arrived = waitFor(bobOnB, 'message:new', (m: Payload) => m.body === `in ${round}`);
      const inside = await sendMessage(onA, admin, room.id, `in ${round}`);
      sent.push({ seq: inside.seq, body: `in ${round}`, whileIn: true });
      await arrived;
    }
    // Live: every message sent while bob was in, once, in order; catch-up gives the rest, gapless.
    expect(received.map((m) => m.body)).toEqual(sent.filter((s) => s.whileIn).map((s) => s.body));
    const sync = await emitWithAck(bobOnB, 'room:sync', { roomId: room.id, afterSeq: 0, limit: 100 });
    const seqs = (sync.messages as Payload[]).map((m) => m.seq as number);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(seqs.at(-1)).toBe(sent.at(-1)!.seq);
    expect(aliceOnA.connected).toBe(true);

    bobOnB.disconnect();
    await waitUntil('node B holds no channel of the room', async () => (await subscribers(room.id)) === 1);
  }, 120_000);

  it('an agent of 300 rooms: its sockets subscribe every room before their hello, at once or in a storm, and leave no channel when they go', async () => {
    const dave = await newAgent(onA);
    const rooms: TestRoom[] = [];
    for (let i = 0; i < 300; i++) rooms.push(await newRoom(onA, admin, [dave]));
    await waitUntil('no channel left by the previous test', async () => (await channels()).length === 0).catch(async (err: unknown) => {
      throw new Error(`${String(err)}: ${(await channels()).join(', ')}`);
    });

    // Five sockets of the agent connect to node B at once (a reconnect storm of one agent).
    const opened = await Promise.all(Array.from({ length: 5 }, () => open(nodeB, dave)));
    for (const { hello } of opened) expect(hello.rooms.length).toBe(300);
    // One subscription per room however many sockets hold it, and its messages reach every socket.
    for (const r of [rooms[0]!, rooms[150]!, rooms[299]!]) expect(await subscribers(r.id)).toBe(1);
    const roomChannels = (await channels()).filter((c) => rooms.some((r) => c === channelOf(r.id)));
    expect(roomChannels.length).toBe(300);
    const arrived = opened.map(({ socket }) => waitFor(socket, 'message:new', (m: Payload) => m.body === 'to the last room'));
    await sendMessage(onA, admin, rooms[299]!.id, 'to the last room');
    await Promise.all(arrived);

    // All of them gone at once: every channel of the test unsubscribed.
    for (const { socket } of opened) socket.disconnect();
    await waitUntil('every channel unsubscribed', async () => (await channels()).length === 0, 15_000);
    // And again: a second storm subscribes them all afresh.
    const again = await Promise.all(Array.from({ length: 3 }, () => open(nodeB, dave)));
    expect((await channels()).filter((c) => rooms.some((r) => c === channelOf(r.id))).length).toBe(300);
    for (const { socket } of again) socket.disconnect();
    await waitUntil('every channel unsubscribed again', async () => (await channels()).length === 0, 15_000);
  }, 180_000);
});
