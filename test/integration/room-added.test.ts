import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, useSockets, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// docs/websocket.md, room:added and room:removed: an agent's sockets hear of every room it joins
// or leaves while connected, on every node.

describe('room:added and room:removed (one node)', () => {
  const t = useTestServer();
  const connect = useSockets(t);

  it('a direct room reaches both sides (every socket of the opener too), subscribed; added and removed members hear of it', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const [a1, a2, b1] = [await connect(alice), await connect(alice), await connect(bob)];
    const heard = [a1, a2, b1].map((s) => waitFor<Payload>(s, 'room:added'));
    const opened = await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: alice.jwt });
    expect(opened.status).toBe(201);
    for (const added of await Promise.all(heard)) expect(added).toEqual({ room: { ...opened.body, kind: 'direct', lastSeq: 0 } });
    // Subscribed: a message arrives without room:join.
    const live = waitFor<Payload>(b1, 'message:new', (m) => m.roomId === opened.body.id);
    expect((await t.api.post(`/api/v1/rooms/${opened.body.id}/messages`, { body: 'hi' }, { jwt: alice.jwt })).status).toBe(201);
    expect((await live).body).toBe('hi');

    const admin = await newAdmin(t.api);
    const room = await newRoom(t.api, admin);
    const added = waitFor<Payload>(b1, 'room:added', (p) => p.room.id === room.id);
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: bob.id })).status).toBe(201);
    expect((await added).room).toMatchObject({ id: room.id, kind: 'group', lastSeq: 0 });
    const removed = waitFor<Payload>(b1, 'room:removed', (p) => p.roomId === room.id);
    expect((await t.api.delete(`/rooms/${room.id}/members/${bob.id}`)).status).toBe(204);
    expect(await removed).toEqual({ roomId: room.id });

    const withMembers = waitFor<Payload>(b1, 'room:added', (p) => p.room.slug === 'with-bob-' + bob.id.slice(0, 8));
    expect((await t.api.post('/rooms', { slug: 'with-bob-' + bob.id.slice(0, 8), name: 'With Bob', members: [bob.id] }, { headers: { 'x-agent-id': admin.id } })).status).toBe(201);
    expect((await withMembers).room.kind).toBe('group');
  });
});

const ready = await servicesAvailable('room:added across nodes', ['postgres', 'redis']);

describe.skipIf(!ready)('room:added across two nodes', () => {
  let cluster: Cluster;
  let apis: Api[];
  const sockets: ClientSocket[] = [];
  beforeAll(async () => {
    cluster = await startCluster({ nodes: 2 });
    apis = cluster.nodes.map((n) => new Api(n.url));
  }, 120_000);
  afterAll(async () => {
    for (const s of sockets) s.disconnect();
    await cluster?.close();
  });

  it('a direct room opened on node A reaches the other agent on node B, and the opener', async () => {
    const alice = await newAgent(apis[0]!);
    const bob = await newAgent(apis[0]!);
    const { socket: onB } = await connectReady(cluster.nodes[1]!.url, bob.jwt);
    const { socket: aliceOnB } = await connectReady(cluster.nodes[1]!.url, alice.jwt);
    sockets.push(onB, aliceOnB);
    const heard = [onB, aliceOnB].map((s) => waitFor<Payload>(s, 'room:added'));
    const opened = await apis[0]!.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: alice.jwt });
    expect(opened.status).toBe(201);
    for (const added of await Promise.all(heard)) expect(added.room).toMatchObject({ id: opened.body.id, kind: 'direct', lastSeq: 0 });
    const live = waitFor<Payload>(onB, 'message:new', (m) => m.roomId === opened.body.id);
    expect((await apis[0]!.post(`/api/v1/rooms/${opened.body.id}/messages`, { body: 'across' }, { jwt: alice.jwt })).status).toBe(201);
    expect((await live).body).toBe('across');
  });
});
