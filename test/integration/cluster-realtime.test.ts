import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, record, roundTrip, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// Real-time across three `node dist/main.js` processes on one PostgreSQL database and one Redis:
// the Socket.IO Redis adapter, presence shared through Redis, and a node killed under load.
const ready = await servicesAvailable('multi-node real-time tests', ['postgres', 'redis']);

/** Short enough that a killed node's sockets are swept within a few seconds. */
const PRESENCE_TTL_SECONDS = 3;

describe.skipIf(!ready)('real-time across three nodes', () => {
  let cluster: Cluster;
  let redis: Redis;
  let apis: Api[];
  let urls: string[];
  let admin: TestAgent;
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    cluster = await startCluster({
      nodes: 3,
      env: {
        PRESENCE_TTL_SECONDS: String(PRESENCE_TTL_SECONDS),
        RATE_LIMIT_AGENT_PER_MINUTE: '100000',
        RATE_LIMIT_ANON_PER_MINUTE: '100000',
        // The load test sends back to back on one socket; the limits themselves are tested elsewhere.
        WS_EVENTS_PER_SECOND: '10000',
        WS_ABUSE_EVENTS_PER_SECOND: '10000',
      },
    });
    urls = cluster.nodes.map((n) => n.url);
    apis = urls.map((u) => new Api(u));
    redis = new Redis(cluster.redisUrl);
    admin = await newAdmin(apis[0]!);
  }, 120_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.disconnect();
  });
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.close();
  });

  const open = async (node: number, agent: TestAgent): Promise<ClientSocket> => {
    const { socket } = await connectReady(urls[node]!, agent.jwt);
    sockets.push(socket);
    return socket;
  };
  const online = async (node: number, agentIds: string[]): Promise<boolean[]> => {
    const res = await apis[node]!.get('/api/companies/default/agents/directory', { jwt: admin.jwt });
    expect(res.status).toBe(200);
    const byId = new Map<string, boolean>(res.body.agents.map((a: { id: string; online: boolean }) => [a.id, a.online]));
    return agentIds.map((id) => byId.get(id)!);
  };
  /** This node's registrations of the agent's sockets in Redis (the shared presence). */
  const liveSockets = (agentId: string): Promise<number> => redis.scard(`${cluster.redisKeyPrefix}presence:agent:${agentId}`);
  const send = (socket: ClientSocket, roomId: string, body: string): Promise<Payload> => emitWithAck(socket, 'message:send', { roomId, body });

  it('delivers message:new to a socket on another node, for a message sent over WebSocket or REST', async () => {
    const [alice, bob] = await Promise.all([newAgent(apis[0]!), newAgent(apis[0]!)]);
    const room = await newRoom(apis[0]!, admin, [alice, bob]);
    const a = await open(0, alice);
    const b = await open(1, bob);
    const c = await open(2, bob);

    const onB = waitFor(b, 'message:new', (m) => m.body === 'ws on A');
    const onC = waitFor(c, 'message:new', (m) => m.body === 'ws on A');
    const echo = waitFor(a, 'message:new', (m) => m.body === 'ws on A'); // sender included
    const ack = await send(a, room.id, 'ws on A');
    for (const received of await Promise.all([onB, onC, echo])) {
      expect(received).toEqual({
        id: ack.messageId, roomId: room.id, authorAgentId: alice.id, body: 'ws on A', createdAt: expect.any(String), seq: ack.seq,
        threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null,
      });
    }

    const restOnB = waitFor(b, 'message:new', (m) => m.body === 'rest on A');
    const sent = await sendMessage(apis[0]!, alice, room.id, 'rest on A');
    expect((await restOnB).id).toBe(sent.id);

    const back = waitFor(a, 'message:new', (m) => m.body === 'ws on B');
    await send(b, room.id, 'ws on B');
    expect((await back).authorAgentId).toBe(bob.id);
  });

  it('keeps an agent online while it has a socket on any node; offline reaches a watcher on another node', async () => {
    const [watcher, agent] = await Promise.all([newAgent(apis[0]!), newAgent(apis[0]!)]);
    await newRoom(apis[0]!, admin, [watcher, agent]);
    const w = await open(0, watcher);
    const updates = record(w, 'presence:update');

    const onlineSeen = waitFor(w, 'presence:update', (p) => p.agentId === agent.id);
    const onA = await open(0, agent);
    expect(await onlineSeen).toEqual({ agentId: agent.id, status: 'online' });
    const onB = await open(1, agent);
    expect(await liveSockets(agent.id)).toBe(2);
    for (const node of [0, 1, 2]) expect(await online(node, [agent.id])).toEqual([true]);

    // Leaving node A: its other socket, on node B, keeps it present.
    onA.disconnect();
    await waitUntil('node A to forget the socket', async () => (await liveSockets(agent.id)) === 1, 5000, 20);
    await roundTrip(w);
    for (const node of [0, 1, 2]) expect(await online(node, [agent.id])).toEqual([true]);

    // Leaving node B: the last socket anywhere, so offline goes to the room, across nodes.
    const offline = waitFor(w, 'presence:update', (p) => p.agentId === agent.id && p.status === 'offline');
    onB.disconnect();
    await offline;
    expect(updates.filter((p) => p.agentId === agent.id)).toEqual([
      { agentId: agent.id, status: 'online' },
      { agentId: agent.id, status: 'offline' },
    ]);
    for (const node of [0, 1, 2]) expect(await online(node, [agent.id])).toEqual([false]);
  });

  it('subscribes and unsubscribes sockets on every node before the membership request answers', async () => {
    const [bob, carol] = await Promise.all([newAgent(apis[0]!), newAgent(apis[0]!)]);
    const beacon = await newRoom(apis[0]!, admin, [bob, carol]);
    const b = await open(1, bob); // the member whose membership changes, on node B
    const c = await open(1, carol); // a sender on the same node B: its broadcast is local to B at once

    for (let round = 0; round < 4; round++) {
      const room = await newRoom(apis[0]!, admin, [carol]);
      // Added through node A: a message sent on node B right after the answer reaches bob.
      expect((await apis[0]!.post(`/rooms/${room.id}/members`, { agentId: bob.id })).status).toBe(201);
      const arrived = waitFor(b, 'message:new', (m) => m.roomId === room.id);
      await send(c, room.id, `welcome ${round}`);
      expect((await arrived).body).toBe(`welcome ${round}`);

      // Removed through node A: nothing more of the room reaches bob, even sent on B at once.
      const seen = record(b, 'message:new');
      expect((await apis[0]!.delete(`/rooms/${room.id}/members/${bob.id}`)).status).toBe(204);
      await Promise.all([send(c, room.id, `gone ${round}`), sendMessage(apis[1]!, admin, room.id, `gone too ${round}`)]);
      const beaconArrived = waitFor(b, 'message:new', (m) => m.roomId === beacon.id && m.body === `beacon ${round}`);
      await send(c, beacon.id, `beacon ${round}`);
      await beaconArrived;
      expect(seen.map((m) => m.body)).toEqual([`beacon ${round}`]);
      b.off('message:new');
    }
  });

  // Open mode (JWTs are irrevocable, docs/protocol.md); the strict-mode cross-node disconnect is
  // proven in realtime-redis.test.ts and test/reliability/ws-revocation.test.ts.
  it('revoking an API token on one node refuses new exchanges on every node and leaves live sockets up', async () => {
    const victim = await newAgent(apis[0]!);
    const onB = await open(1, victim);
    const onC = await open(2, victim);
    expect((await apis[0]!.delete(`/api/v1/tokens/${victim.prefix}`)).status).toBe(204);
    for (const api of apis) {
      const exchange = await api.post('/api/v1/sessions', undefined, { headers: { authorization: `Bearer ${victim.apiToken}` } });
      expect(exchange.status).toBe(401);
    }
    await roundTrip(onB);
    await roundTrip(onC);
    expect(onB.connected && onC.connected).toBe(true);
  });

  it("counts an agent's WebSocket events in Redis, under REDIS_KEY_PREFIX (a connection's own budget stays on its node)", async () => {
    const agent = await newAgent(apis[0]!);
    const socket = await open(1, agent);
    await roundTrip(socket);
    expect(await redis.exists(`${cluster.redisKeyPrefix}rl:ws-agent-events:${agent.id}`)).toBe(1);
    expect(await redis.exists(`${cluster.redisKeyPrefix}rl:ws-events:${socket.id}`)).toBe(0);
  });

  it('loses no acknowledged message when a node is SIGKILLed under WebSocket load, and its agents go offline', async () => {
    const nodeC = cluster.nodes[2]!;
    const [watcher, onlyOnC, alsoOnA, onlyOnA] = await Promise.all([newAgent(apis[0]!), newAgent(apis[0]!), newAgent(apis[0]!), newAgent(apis[0]!)]);
    const room = await newRoom(apis[0]!, admin, [watcher, onlyOnC, alsoOnA, onlyOnA]);
    const w = await open(1, watcher); // on node B, which survives
    const senders = [await open(2, onlyOnC), await open(2, alsoOnA), await open(0, alsoOnA), await open(0, onlyOnA)];
    const updates = record(w, 'presence:update');

    const acknowledged: string[] = [];
    let stopping = false;
    const load = senders.map(async (socket, s) => {
      for (let i = 0; !stopping && socket.connected; i++) {
        try {
          const ack = await emitWithAck(socket, 'message:send', { roomId: room.id, body: `sender ${s} #${i}` }, 3000);
          if (typeof ack.messageId === 'string') acknowledged.push(ack.messageId);
        } catch {
          return; // no acknowledgement: the node died under it
        }
      }
    });
    await waitUntil('messages acknowledged on every node', () => acknowledged.length >= 60, 30_000, 5);
    const killedAt = Date.now();
    expect((await nodeC.kill('SIGKILL')).signal).toBe('SIGKILL');
    await waitUntil('the killed node\'s sockets to drop', () => !senders[0]!.connected && !senders[1]!.connected, 5000, 10);
    const atKill = acknowledged.length;
    await waitUntil('more sends on the surviving node', () => acknowledged.length >= atKill + 20, 10_000, 5);
    stopping = true;
    await Promise.all(load);

    // Every acknowledged message is stored exactly once, read through a surviving node.
    const stored: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await apis[0]!.get(`/api/v1/rooms/${room.id}/messages?limit=100${cursor === null ? '' : `&before=${cursor}`}`, { jwt: admin.jwt });
      expect(page.status).toBe(200);
      stored.push(...page.body.messages.map((m: { id: string }) => m.id));
      cursor = page.body.hasMore ? page.body.nextCursor : null;
    } while (cursor !== null);
    expect(new Set(stored).size).toBe(stored.length);
    const storedIds = new Set(stored);
    expect(acknowledged.filter((id) => !storedIds.has(id))).toEqual([]);

    // The killed node's agent goes offline for the watcher on node B, within 30 s (here: the TTL
    // plus one sweep), swept by a surviving node; the agent with a socket on node A stays online.
    await waitFor(w, 'presence:update', (p) => p.agentId === onlyOnC.id && p.status === 'offline', 30_000);
    const elapsed = Date.now() - killedAt;
    expect(elapsed).toBeLessThan(30_000);
    expect(elapsed).toBeLessThan((2 * PRESENCE_TTL_SECONDS + 3) * 1000);
    console.warn(`[cluster-realtime] ${acknowledged.length} acknowledged messages, all stored once; offline seen ${elapsed} ms after SIGKILL`);
    // Swept in one script and announced together: had the other agents gone offline, it would show now.
    await roundTrip(w);
    expect(updates.filter((p) => p.status === 'offline').map((p) => p.agentId)).toEqual([onlyOnC.id]);
    for (const node of [0, 1]) expect(await online(node, [onlyOnC.id, alsoOnA.id, onlyOnA.id])).toEqual([false, true, true]);
  }, 60_000);
});
