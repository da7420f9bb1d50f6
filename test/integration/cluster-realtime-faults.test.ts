import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startPrivateCluster, type PrivateCluster } from '../helpers/cluster.js';
import { servicesAvailable, type PrivatePostgres, type PrivateRedis } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';
import { connect, connectReady, disconnected, emitWithAck, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// Two nodes on a private PostgreSQL and a private Redis, each restarted under live WebSocket
// connections: the sockets stay up, events get a clear UNAVAILABLE while a dependency is away, and
// cross-node delivery and shared presence come back without restarting any node.
const ready = await servicesAvailable('multi-node real-time fault tests', ['postgres-binaries', 'redis-server']);

describe.skipIf(!ready)('real-time across nodes through Redis and PostgreSQL restarts', () => {
  let postgres: PrivatePostgres;
  let redis: PrivateRedis;
  let cluster: PrivateCluster;
  let apis: Api[];
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  let onA: ClientSocket; // alice, on node A
  let onB: ClientSocket; // bob, on node B

  beforeAll(async () => {
    cluster = await startPrivateCluster({
      nodes: 2,
      env: { PRESENCE_TTL_SECONDS: '3', RATE_LIMIT_AGENT_PER_MINUTE: '100000', RATE_LIMIT_ANON_PER_MINUTE: '100000' },
    });
    ({ postgres, redis } = cluster);
    apis = cluster.nodes.map((n) => new Api(n.url));
    admin = await newAdmin(apis[0]!);
    [alice, bob] = await Promise.all([newAgent(apis[0]!), newAgent(apis[0]!)]);
    room = await newRoom(apis[0]!, admin, [alice, bob]);
    onA = (await connectReady(cluster.nodes[0]!.url, alice.jwt)).socket;
    onB = (await connectReady(cluster.nodes[1]!.url, bob.jwt)).socket;
  }, 120_000);
  afterAll(async () => {
    onA?.disconnect();
    onB?.disconnect();
    await cluster?.close();
  });

  const send = (socket: ClientSocket, body: string): Promise<Payload> => emitWithAck(socket, 'message:send', { roomId: room.id, body }, 10_000);
  /** Sends on node A and resolves once bob's socket on node B received it. */
  const deliveredAcross = async (body: string, timeoutMs = 5000): Promise<void> => {
    const arrived = waitFor(onB, 'message:new', (m) => m.body === body, timeoutMs);
    const ack = await send(onA, body);
    expect(ack).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    expect((await arrived).id).toBe(ack.messageId);
  };
  const online = async (node: number): Promise<Record<string, boolean>> => {
    const res = await apis[node]!.get('/api/companies/default/agents/directory', { jwt: admin.jwt });
    if (res.status !== 200) return {};
    return Object.fromEntries(res.body.agents.map((a: { id: string; online: boolean }) => [a.id, a.online]));
  };

  it('rides out a Redis restart: UNAVAILABLE meanwhile, then cross-node delivery and shared presence without restarting nodes', async () => {
    await deliveredAcross('before the Redis restart');

    await redis.kill('SIGKILL');
    for (const api of apis) {
      const readyz = await api.get('/readyz');
      expect(readyz.status).toBe(503);
      expect(readyz.body).toEqual({ status: 'unavailable', checks: { database: 'ok', redis: 'fail' } });
    }
    const started = Date.now();
    const refused = await send(onA, 'while Redis is down');
    expect(refused).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(onA.connected && onB.connected).toBe(true);
    // A new connection cannot be registered in presence: told so, and its transport closed, which
    // socket.io-client retries by itself (a passing refusal, docs/websocket.md).
    const refusedSocket = connect(cluster.nodes[1]!.url, bob.jwt);
    const [error, reason] = await Promise.all([waitFor(refusedSocket, 'error'), disconnected(refusedSocket)]);
    expect(error).toEqual({ code: 'UNAVAILABLE', message: expect.any(String) });
    expect(reason).toBe('transport close');

    await redis.start(); // empty: the old Redis kept nothing
    await Promise.all(cluster.nodes.map((n) => n.waitReady(30_000)));
    // The adapter's subscriber reconnects on its own backoff (at most 2 s); then every message crosses.
    let attempt = 0;
    await waitUntil('cross-node delivery after the restart', async () => {
      await deliveredAcross(`after the Redis restart, try ${attempt++}`, 1000);
      return true;
    }, 20_000, 0);
    await deliveredAcross('and the next one');
    const back = waitFor(onA, 'message:new', (m) => m.body === 'REST on B after the restart');
    await sendMessage(apis[1]!, bob, room.id, 'REST on B after the restart');
    await back;

    // Each node registered its live sockets again in the new Redis: both agents online everywhere,
    // and presence is shared again (bob leaving node B is seen by alice on node A).
    await waitUntil('presence registered again', async () => {
      const views = await Promise.all([online(0), online(1)]);
      return views.every((v) => v[alice.id] === true && v[bob.id] === true);
    }, 15_000);
    const offline = waitFor(onA, 'presence:update', (p) => p.agentId === bob.id && p.status === 'offline');
    onB.disconnect();
    await offline;
    onB = (await connectReady(cluster.nodes[1]!.url, bob.jwt)).socket;
    expect(cluster.nodes.every((n) => n.alive())).toBe(true);
  }, 60_000);

  it('answers WebSocket sends with UNAVAILABLE while PostgreSQL restarts, and delivers across nodes after', async () => {
    await postgres.stop('immediate');
    for (const socket of [onA, onB]) {
      const started = Date.now();
      const refused = await send(socket, 'while PostgreSQL is down');
      expect(refused).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
      expect(Date.now() - started).toBeLessThan(8000); // bounded by the pool's connect timeout, never hanging
    }
    const history = await emitWithAck(onB, 'message:history', { roomId: room.id }, 10_000);
    expect(history).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    expect(onA.connected && onB.connected).toBe(true);

    await postgres.start();
    await Promise.all(cluster.nodes.map((n) => n.waitReady(30_000)));
    await deliveredAcross('after the PostgreSQL restart');
    const page = await apis[1]!.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: admin.jwt });
    expect(page.body.messages.map((m: { body: string }) => m.body)).not.toContain('while PostgreSQL is down');
    expect(cluster.nodes.every((n) => n.alive())).toBe(true);
  }, 60_000);
});
