import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { startCluster, type Cluster, type NodeProcess } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, record, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// A plain Socket.IO client on a node whose path to Redis goes silent (a network cut without a
// reset, through a proxy) and comes back, then on the same node after a kill -9 and restart. Before
// the fix its socket stayed connected and received nothing from other nodes, for good: the node's
// subscriber connections never noticed. Now they are pinged and reconnected, and the position check
// that follows tells the socket what it missed and subscribes it to the membership added meanwhile.
// The periodic check is off here (POSITION_CHECK_INTERVAL_MS=0): only the reconnection triggers it.
const ready = await servicesAvailable('silent Redis cut of one node', ['postgres', 'redis']);

describe.skipIf(!ready)('no silent gap after a silent Redis cut of one node and its restart', () => {
  let cluster: Cluster;
  let proxy: TcpProxy;
  let nodeB: NodeProcess;
  let api: Api;
  let admin: TestAgent;
  let bob: TestAgent;
  let plain: ClientSocket | undefined;

  beforeAll(async () => {
    const env = { POSITION_CHECK_INTERVAL_MS: '0', RATE_LIMIT_AGENT_PER_MINUTE: '100000', RATE_LIMIT_ANON_PER_MINUTE: '100000' };
    cluster = await startCluster({ nodes: 1, env });
    const redis = new URL(cluster.redisUrl);
    proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    nodeB = await cluster.addNode({ name: 'node-B', env: process.env.GAP_DIRECT ? {} : { REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
    api = new Api(cluster.nodes[0]!.url);
    admin = await newAdmin(api);
    bob = await newAgent(api);
  }, 120_000);
  afterAll(async () => {
    plain?.disconnect();
    await cluster?.close();
    await proxy?.close();
  });

  it('tells the socket what it missed and subscribes it to the membership added meanwhile; then after a kill -9 and restart too', async () => {
    const first = await newRoom(api, admin, [bob]);
    const second = await newRoom(api, admin, []);
    // A plain client as documented: Socket.IO's own reconnection on.
    const connected = await connectReady(nodeB.url, bob.jwt, { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 1000 });
    plain = connected.socket;
    expect(connected.hello.rooms).toEqual([first.id]);
    const live = record<Payload>(plain, 'message:new');
    const positions = record<{ lastSeqs: Record<string, number> }>(plain, 'room:positions');
    const before = await sendMessage(api, admin, first.id, 'before the cut');
    await waitUntil('the first message on node B', () => live.some((m) => m.id === before.id), 10_000);

    proxy.blackhole();
    const missed = await sendMessage(api, admin, first.id, 'while node B is cut off');
    expect((await api.post(`/rooms/${second.id}/members`, { agentId: bob.id }, { headers: { 'x-agent-id': admin.id } })).status).toBe(201);
    proxy.restore();

    // Within the subscribers' ping timeout and the check's delay: both rooms, at their current positions.
    const told = await waitFor(plain, 'room:positions', (p: Payload) => p.lastSeqs[first.id] === missed.seq && second.id in p.lastSeqs, 30_000);
    expect(told.lastSeqs).toEqual({ [first.id]: missed.seq, [second.id]: 0 });
    expect(live.map((m: Payload) => m.id)).toEqual([before.id]); // the broadcast itself was lost
    const sync = await emitWithAck(plain, 'room:sync', { roomId: first.id, afterSeq: before.seq });
    expect(sync.messages?.map((m: Payload) => m.id), JSON.stringify(sync)).toEqual([missed.id]);
    const inSecond = await sendMessage(api, admin, second.id, 'in the room added while cut off');
    await waitUntil('the message of the added room on node B', () => live.some((m) => m.id === inSecond.id), 10_000);

    // kill -9 and restart of node B: the socket reconnects by itself and is in both rooms again.
    const rehello = waitFor(plain, 'agent:hello-ack', () => true, 60_000);
    await nodeB.restart();
    expect([...(await rehello).rooms].sort()).toEqual([first.id, second.id].sort());
    const after = await sendMessage(api, admin, first.id, 'after the restart');
    await waitUntil('a message after the restart', () => live.some((m) => m.id === after.id), 10_000);
    expect(positions.length).toBeGreaterThan(0);
  }, 120_000);
});
