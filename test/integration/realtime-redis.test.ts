import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { connectReady, emitWithAck, record, waitFor, type ClientSocket } from '../helpers/ws.js';
import { servicesAvailable } from '../helpers/services.js';

const available = await servicesAvailable('realtime-redis tests', ['redis']);

describe.skipIf(!available)('two nodes on one Redis (Socket.IO Redis adapter)', () => {
  let cluster: TestNodes;
  let node1: RunningApp;
  let node2: RunningApp;
  let api1: Api;
  let api2: Api;
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    cluster = await startTestNodes(2);
    [node1, node2] = cluster.nodes.map((n) => n.app) as [RunningApp, RunningApp];
    api1 = new Api(node1.url);
    api2 = new Api(node2.url);
    admin = await newAdmin(api1);
    alice = await newAgent(api1);
    bob = await newAgent(api1);
  });
  afterAll(async () => {
    for (const s of sockets) s.disconnect();
    await cluster?.close();
  });

  const open = async (node: RunningApp, agent: TestAgent) => {
    const { socket } = await connectReady(node.url, agent.jwt);
    sockets.push(socket);
    return socket;
  };

  it('delivers a message sent on one node to a member connected to the other, over WebSocket and REST', async () => {
    const room = await newRoom(api1, admin, [alice, bob]);
    const a = await open(node1, alice);
    const b = await open(node2, bob);

    const toBob = waitFor(b, 'message:new', (m) => m.body === 'across nodes');
    const ack = await emitWithAck(a, 'message:send', { roomId: room.id, body: 'across nodes' });
    expect(await toBob).toMatchObject({ id: ack.messageId, roomId: room.id, authorAgentId: alice.id });

    const toAlice = waitFor(a, 'message:new', (m) => m.body === 'REST on node 2');
    await sendMessage(api2, bob, room.id, 'REST on node 2');
    await toAlice;
  });

  it('subscribes and unsubscribes a socket on the other node when a membership changes', async () => {
    const watched = await newRoom(api1, admin, [alice]);
    const beacon = await newRoom(api1, admin, [alice, bob]);
    const a = await open(node1, alice);
    const b = await open(node2, bob);

    // Added on node 1: bob's socket on node 2 is subscribed.
    expect((await api1.post(`/rooms/${watched.id}/members`, { agentId: bob.id })).status).toBe(201);
    const arrived = waitFor(b, 'message:new', (m) => m.roomId === watched.id);
    await emitWithAck(a, 'message:send', { roomId: watched.id, body: 'you are in' });
    expect((await arrived).body).toBe('you are in');

    // Removed on node 1: nothing more of that room reaches bob on node 2. The beacon message is
    // published by the same node after it, so once it arrived, the other would have too.
    expect((await api1.delete(`/rooms/${watched.id}/members/${bob.id}`)).status).toBe(204);
    const seen = record(b, 'message:new');
    const beaconArrived = waitFor(b, 'message:new', (m) => m.roomId === beacon.id);
    await emitWithAck(a, 'message:send', { roomId: watched.id, body: 'you are out' });
    await emitWithAck(a, 'message:send', { roomId: beacon.id, body: 'beacon' });
    await beaconArrived;
    expect(seen.map((m) => m.body)).toEqual(['beacon']);
  });

  it('open mode: revoking an API token leaves its sessions\' sockets up on every node (strict: test/reliability/ws-revocation.test.ts)', async () => {
    const holder = await newAgent(api1);
    const socket = await open(node2, holder);
    const errors = record(socket, 'error');
    expect((await api1.delete(`/api/v1/tokens/${holder.prefix}`)).status).toBe(204);
    expect(await emitWithAck(socket, 'room:list')).toEqual({ rooms: [] });
    expect(socket.connected).toBe(true);
    expect(errors).toEqual([]);
  });
});
