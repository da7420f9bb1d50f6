import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startCluster, type Cluster, type NodeProcess } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitUntil } from '../helpers/wait.js';
import { connect, disconnected, record, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// Refused connections (docs/websocket.md): a refusal for a passing reason (here the node's Redis
// cut while a client connects) closes the transport, so a plain socket.io-client, with its own
// reconnection on and no code beyond the documented events, retries by itself and is back once
// Redis is; a refusal for a lasting reason (a bad token, a disabled agent) is a server disconnect,
// which socket.io-client never retries.
const ready = await servicesAvailable('refused connections', ['postgres', 'redis']);

/** A plain client as documented: socket.io-client's own reconnection, shorter delays to keep the test short. */
const RECONNECTING = { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 1000 };

describe.skipIf(!ready)('refused connections: passing reasons are retried by the client, lasting ones are final', () => {
  let cluster: Cluster;
  let proxy: TcpProxy;
  let node: NodeProcess;
  let api: Api;
  let admin: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    const env = { RATE_LIMIT_AGENT_PER_MINUTE: '100000', RATE_LIMIT_ANON_PER_MINUTE: '100000' };
    cluster = await startCluster({ nodes: 0, env });
    const redis = new URL(cluster.redisUrl);
    proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    node = await cluster.addNode({ name: 'node-A', env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
    api = new Api(node.url);
    admin = await newAdmin(api);
    bob = await newAgent(api);
    room = await newRoom(api, admin, [bob]);
  }, 120_000);
  afterAll(async () => {
    for (const s of sockets) s.disconnect();
    await cluster?.close();
    await proxy?.close();
  });

  /** A plain client's course: every `error`, `disconnect` and `agent:hello-ack`, and the messages that came live. */
  const plainClient = (transports: ('websocket' | 'polling')[]): { socket: ClientSocket; order: string[]; live: Payload[] } => {
    const socket = connect(node.url, bob.jwt, { ...RECONNECTING, transports });
    sockets.push(socket);
    const order: string[] = [];
    socket.on('error', (e: Payload) => order.push(`error ${e.code}`));
    socket.on('disconnect', (reason: string) => order.push(`disconnect ${reason}`));
    socket.on('agent:hello-ack', () => order.push('hello'));
    return { socket, order, live: record<Payload>(socket, 'message:new') };
  };

  it('Redis cut while a plain client connects: error UNAVAILABLE, "transport close", then back by itself with the messages sent afterwards', async () => {
    proxy.blackhole();
    // WebSocket only (docs/protocol.md, Connecting) and socket.io-client's default (long-polling first).
    const clients = [plainClient(['websocket']), plainClient(['polling', 'websocket'])];
    const refusals = clients.map(({ socket }) => Promise.all([waitFor(socket, 'error', () => true, 10_000), disconnected(socket, 10_000)]));
    for (const [i, { socket, order }] of clients.entries()) {
      const [error, reason] = await refusals[i]!;
      expect(error).toEqual({ code: 'UNAVAILABLE', message: expect.any(String) });
      expect(reason).toBe('transport close');
      expect(order.slice(0, 2)).toEqual(['error UNAVAILABLE', 'disconnect transport close']);
      expect(socket.active).toBe(true); // socket.io-client is reconnecting on its own
    }

    const hellos = clients.map(({ socket }) => waitFor(socket, 'agent:hello-ack', () => true, 30_000));
    proxy.restore();
    for (const hello of hellos) expect((await hello).rooms).toEqual([room.id]);
    const after = await sendMessage(api, admin, room.id, 'after Redis is back');
    for (const { socket, order, live } of clients) {
      expect(order.filter((e) => e === 'hello')).toHaveLength(1);
      // Every refusal before the hello was an error then a transport close, never a final disconnect.
      expect(order.slice(0, -1).every((e) => e === 'error UNAVAILABLE' || e === 'disconnect transport close')).toBe(true);
      await waitUntil('the message sent after Redis came back', () => live.some((m) => m.id === after.id), 10_000);
      expect(socket.connected).toBe(true);
    }
  }, 60_000);

  it('a bad token: error AUTH_FAILED, "io server disconnect", and the client does not reconnect', async () => {
    const socket = connect(node.url, 'not-a-jwt', RECONNECTING);
    sockets.push(socket);
    const error = waitFor(socket, 'error');
    expect(await disconnected(socket)).toBe('io server disconnect');
    expect(await error).toEqual({ code: 'AUTH_FAILED', message: expect.any(String) });
    expect(socket.active).toBe(false); // socket.io-client gives up: no reconnection is scheduled
  });

  it('a disabled agent: error AUTH_FAILED, "io server disconnect", and the client does not reconnect', async () => {
    const carol = await newAgent(api);
    expect((await api.post(`/api/v1/agents/${carol.id}/disable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    const socket = connect(node.url, carol.jwt, RECONNECTING);
    sockets.push(socket);
    const error = waitFor(socket, 'error');
    expect(await disconnected(socket)).toBe('io server disconnect');
    expect(await error).toEqual({ code: 'AUTH_FAILED', message: expect.stringContaining('disabled') });
    expect(socket.active).toBe(false);
  });
});
