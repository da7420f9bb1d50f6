import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestAgent, TestRoom } from '../helpers/api.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTwoNodeRoom, type TwoNodeRoom } from '../helpers/two-nodes.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// docs/protocol.md, Activity, with two nodes: updates reach the room's sockets on the other node,
// one per agent per second whichever node the sets go through, and idle follows the agent's last
// socket wherever it was.

const available = await servicesAvailable('activity across nodes', ['redis']);

describe.runIf(available)('activity across two nodes', () => {
  let cluster: TwoNodeRoom;
  let reader: TestAgent;
  let writer: TestAgent;
  let room: TestRoom;
  const sockets: ClientSocket[] = [];
  const connect = async (node: 0 | 1, agent: TestAgent): Promise<ClientSocket> => {
    const { socket } = await connectReady(cluster.nodes.nodes[node]!.url, agent.jwt);
    sockets.push(socket);
    return socket;
  };
  /** The updates of the writer the socket hears, with when they came. */
  const heard = (socket: ClientSocket): (Payload & { at: number })[] => {
    const seen: (Payload & { at: number })[] = [];
    socket.on('activity:update', (u: Payload) => {
      if (u.agentId === writer.id && u.roomId === room.id) seen.push({ ...u, at: Date.now() });
    });
    return seen;
  };
  /** What node i's members listing shows of the writer. */
  const shownOn = (i: 0 | 1): Payload => cluster.nodes.nodes[i]!.app.ctx.activity.of(room.id, writer.id);

  /** The previous test's idle (its sockets went) has gone out on both nodes, and its second has passed. */
  const quiet = async (): Promise<void> => {
    await waitUntil('no activity of the writer left', () => shownOn(0) === null && shownOn(1) === null, 5_000);
    await waitToProveAbsence(1_100);
  };

  beforeAll(async () => {
    cluster = await startTwoNodeRoom();
    ({ reader, writer, room } = cluster);
  });
  // Each test starts with no socket of the writer left, so that its last socket is the test's.
  afterEach(() => {
    for (const s of sockets.splice(0)) s.disconnect();
  });
  afterAll(() => cluster?.close());

  it('a set on node A reaches a member\'s socket on node B, and node B\'s members listing', async () => {
    const onB = await connect(1, reader);
    const setter = await connect(0, writer);
    const update = waitFor<Payload>(onB, 'activity:update', (u) => u.agentId === writer.id && u.state === 'working');
    expect(await emitWithAck(setter, 'activity:set', { roomId: room.id, state: 'working', text: 'on node A' })).toEqual({ ok: true });
    expect(await update).toEqual({ roomId: room.id, agentId: writer.id, state: 'working', text: 'on node A', expiresAt: expect.any(String) });
    const listing = await cluster.onB.get(`/api/v1/rooms/${room.id}/members`, { jwt: reader.jwt });
    expect(listing.body.members.find((m: Payload) => m.agentId === writer.id).activity).toMatchObject({ state: 'working', text: 'on node A' });
  });

  it('a storm through node A costs node B\'s sockets one update now and the latest a second later', async () => {
    await quiet();
    const onB = await connect(1, reader);
    const seen = heard(onB);
    const setter = await connect(0, writer);
    const acks: Payload[] = [];
    for (let i = 0; i < 10; i++) acks.push(await emitWithAck(setter, 'activity:set', { roomId: room.id, state: 'working', text: `step ${i}` }));
    const accepted = acks.flatMap((a, i) => (a.ok === true ? [`step ${i}`] : []));
    await waitUntil('the held update', () => seen.length === 2, 5_000);
    await waitToProveAbsence(1_200);
    expect(seen.map((u) => u.text)).toEqual(['step 0', accepted.at(-1)]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it('a set on node B within the second after node A sent one is held: one update per agent per second across nodes', async () => {
    await quiet();
    const watcher = await connect(0, reader);
    const seen = heard(watcher);
    const viaA = await connect(0, writer);
    const viaB = await connect(1, writer);
    expect(await emitWithAck(viaA, 'activity:set', { roomId: room.id, state: 'typing' })).toEqual({ ok: true });
    // Node B has heard node A's update (the bridge), then the writer sets through node B.
    await waitUntil('node B knows the typing', () => shownOn(1)?.state === 'typing');
    expect(await emitWithAck(viaB, 'activity:set', { roomId: room.id, state: 'working', text: 'via B' })).toEqual({ ok: true });
    await waitUntil('both updates', () => seen.length === 2, 5_000);
    expect(seen.map((u) => `${u.state} ${u.text}`)).toEqual(['typing ', 'working via B']);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it('idle reaches node A when the writer\'s last socket, on node B, goes; not while one is left on node A', async () => {
    await quiet();
    const watcher = await connect(0, reader);
    const seen = heard(watcher);
    const viaA = await connect(0, writer);
    const viaB = await connect(1, writer);
    expect(await emitWithAck(viaB, 'activity:set', { roomId: room.id, state: 'working', text: 'until I go' })).toEqual({ ok: true });
    await waitUntil('the working update', () => seen.length === 1);
    viaA.disconnect();
    await waitToProveAbsence(1_500);
    expect(seen.map((u) => u.state)).toEqual(['working']);
    viaB.disconnect();
    await waitUntil('the idle update', () => seen.length === 2, 5_000);
    expect(seen[1]).toMatchObject({ roomId: room.id, agentId: writer.id, state: 'idle', text: '', expiresAt: null });
    await waitUntil('node A forgets it', () => shownOn(0) === null);
  });
});
