import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { MessageType, type ClusterMessage } from 'socket.io-adapter';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { roomChannel } from '../../src/realtime/protocol.js';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { configFor, createTestDatabase, REDIS_TEST_URL, startTestServer, type TestDatabase, type TestServer } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, record, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// Work follows members (docs/scale-out.md, "Fan-out"): on Redis >= 7 a room's broadcasts travel on
// its shard channel, which a node subscribes only while it holds a socket in the room. Two nodes in
// this process (B reaches Redis through a proxy, to cut it), their adapters on a channel prefix of
// their own; what B's adapter receives from Redis is counted per room.
const ready = await servicesAvailable('sharded Socket.IO adapter', ['postgres', 'redis']);

describe.skipIf(!ready)('the sharded adapter: a room\'s broadcasts reach only the nodes holding its members', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let nodeA: TestServer;
  let nodeB: TestServer;
  let redis: Redis;
  let onA: Api;
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let room: TestRoom; // alice and bob
  let marker: TestRoom; // carol's, whose socket stays on node B
  let key: string;
  const sockets: ClientSocket[] = [];
  /** Per Socket.IO room, the broadcasts node B's adapter received from Redis. */
  const receivedOnB = new Map<string, number>();

  beforeAll(async () => {
    db = await createTestDatabase();
    const redisUrl = new URL(REDIS_TEST_URL);
    proxy = await startTcpProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
    key = `ams-test:${randomBytes(5).toString('hex')}`;
    // Only a reconnection triggers the position check here (no periodic run).
    const ws = { ...configFor(db.url).ws, positionCheckIntervalMs: 0 };
    nodeA = await startTestServer({ db, config: { redisUrl: REDIS_TEST_URL, ws }, context: { realtimeAdapterKey: key } });
    nodeB = await startTestServer({ db, config: { redisUrl: `redis://127.0.0.1:${proxy.port}`, ws }, context: { realtimeAdapterKey: key } });
    const adapterB = nodeB.app.realtime.namespace.adapter as unknown as { onMessage(message: ClusterMessage, offset?: string): void };
    const onMessage = adapterB.onMessage.bind(adapterB);
    adapterB.onMessage = (message, offset) => {
      if (message.type === MessageType.BROADCAST) for (const r of message.data.opts.rooms) receivedOnB.set(r, (receivedOnB.get(r) ?? 0) + 1);
      onMessage(message, offset);
    };
    redis = new Redis(REDIS_TEST_URL);
    onA = new Api(nodeA.url);
    admin = await newAdmin(onA);
    [alice, bob, carol] = await Promise.all([newAgent(onA), newAgent(onA), newAgent(onA)]);
    room = await newRoom(onA, admin, [alice, bob]);
    marker = await newRoom(onA, admin, [carol]);
  }, 120_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.disconnect();
  });
  afterAll(async () => {
    for (const s of sockets) s.disconnect();
    redis?.disconnect();
    await nodeB?.close({ keepDatabase: true });
    await nodeA?.close({ keepDatabase: true });
    await proxy?.close();
    await db?.drop();
  });

  const open = async (node: TestServer, agent: TestAgent): Promise<ClientSocket> => {
    const { socket } = await connectReady(node.url, agent.jwt);
    sockets.push(socket);
    return socket;
  };
  /** The room's shard channel of the `/agents` namespace, as the adapter names it. */
  const channelOf = (roomId: string): string => `${key}#/agents#${roomChannel(roomId)}#`;
  const subscribers = async (roomId: string): Promise<number> => {
    const [, count] = (await redis.call('PUBSUB', 'SHARDNUMSUB', channelOf(roomId))) as [string, number];
    return Number(count);
  };
  const sent = (socket: ClientSocket, body: string): Promise<Payload> => waitFor(socket, 'message:new', (m: Payload) => m.body === body);

  it('runs sharded on this Redis (>= 7)', () => {
    expect(nodeA.app.realtime.adapterMode).toBe('sharded');
    expect(nodeB.app.realtime.adapterMode).toBe('sharded');
  });

  it('does not subscribe node B to a room whose members are all on node A; subscribes it while a member is there', async () => {
    const aliceOnA = await open(nodeA, alice);
    const bobOnA = await open(nodeA, bob);
    const carolOnB = await open(nodeB, carol);
    expect(await subscribers(room.id)).toBe(1); // node A only
    expect(await subscribers(marker.id)).toBe(1); // node B only

    // From either node's REST API, every member on A gets the room's messages; B's adapter receives
    // none of them. The marker's message, published after them on the same connection, reaches B
    // after them: once B has it, the room's would have arrived already.
    for (const [via, body] of [[onA, 'sent through A'], [new Api(nodeB.url), 'sent through B']] as const) {
      const got = [sent(aliceOnA, body), sent(bobOnA, body)];
      await sendMessage(via, admin, room.id, body);
      await Promise.all(got);
    }
    const markerSeen = sent(carolOnB, 'marker');
    await sendMessage(onA, admin, marker.id, 'marker');
    await markerSeen;
    expect(receivedOnB.get(roomChannel(room.id)) ?? 0).toBe(0);
    expect(receivedOnB.get(roomChannel(marker.id))).toBeGreaterThan(0);

    // A member on B: subscribed once its hello arrived (the hello waits for it), and it gets the room's messages.
    const bobOnB = await open(nodeB, bob);
    expect(await subscribers(room.id)).toBe(2);
    let arrived = sent(bobOnB, 'with bob on B');
    await sendMessage(onA, admin, room.id, 'with bob on B');
    await arrived;
    expect(receivedOnB.get(roomChannel(room.id))).toBeGreaterThan(0);

    // It leaves the room: B unsubscribes; it joins again: B subscribes before the join answers.
    expect(await emitWithAck(bobOnB, 'room:leave', { roomId: room.id })).toEqual({ ok: true });
    await waitUntil('node B unsubscribed after room:leave', async () => (await subscribers(room.id)) === 1);
    expect(await emitWithAck(bobOnB, 'room:join', { roomId: room.id })).toEqual({ ok: true });
    expect(await subscribers(room.id)).toBe(2);
    arrived = sent(bobOnB, 'after joining again');
    await sendMessage(onA, admin, room.id, 'after joining again');
    await arrived;

    // Its socket disconnects: B unsubscribes, and hears nothing more of the room.
    bobOnB.disconnect();
    await waitUntil('node B unsubscribed after the disconnect', async () => (await subscribers(room.id)) === 1);
    const before = receivedOnB.get(roomChannel(room.id));
    const got = sent(aliceOnA, 'after bob left B');
    await sendMessage(onA, admin, room.id, 'after bob left B');
    await got;
    const markerAgain = sent(carolOnB, 'marker again');
    await sendMessage(onA, admin, marker.id, 'marker again');
    await markerAgain;
    expect(receivedOnB.get(roomChannel(room.id))).toBe(before);
  }, 60_000);

  it('subscribes node B before a membership added there answers', async () => {
    await waitUntil('no socket of the room anywhere', async () => (await subscribers(room.id)) === 0);
    const carolOnB = await open(nodeB, carol);
    const added = waitFor(carolOnB, 'room:added', (p: Payload) => p.room.id === room.id);
    expect((await onA.post(`/rooms/${room.id}/members`, { agentId: carol.id }, { headers: { 'x-agent-id': admin.id } })).status).toBe(201);
    expect(await subscribers(room.id)).toBe(1); // node B, for carol
    const arrived = sent(carolOnB, 'right after carol was added');
    await sendMessage(onA, admin, room.id, 'right after carol was added');
    await arrived;
    await added;
    expect((await onA.delete(`/rooms/${room.id}/members/${carol.id}`, { headers: { 'x-agent-id': admin.id } })).status).toBe(204);
    await waitUntil('node B unsubscribed after the removal', async () => (await subscribers(room.id)) === 0);
  }, 30_000);

  it('restores node B\'s room subscriptions after a silent cut, and tells its member what it missed', async () => {
    await open(nodeA, alice);
    const bobOnB = await open(nodeB, bob);
    expect(await subscribers(room.id)).toBe(2);
    const live = record<Payload>(bobOnB, 'message:new');

    proxy.blackhole();
    // Redis still counts B's dead connection as subscribed; what B misses is what matters.
    const missed = await sendMessage(onA, admin, room.id, 'while node B is cut off');
    proxy.restore();

    // B's subscriber is found silent, reconnects and subscribes again; the position check follows.
    const told = await waitFor(bobOnB, 'room:positions', (p: Payload) => p.lastSeqs[room.id] === missed.seq, 30_000);
    expect(told.lastSeqs[room.id]).toBe(missed.seq);
    expect(live.map((m: Payload) => m.id)).not.toContain(missed.id);
    await waitUntil('the dead connection gone, the new one subscribed', async () => (await subscribers(room.id)) === 2, 15_000);
    const after = sent(bobOnB, 'after the cut');
    await sendMessage(onA, admin, room.id, 'after the cut');
    await after;
  }, 60_000);
});
