import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { testConfig } from '../helpers/config.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, record, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';
import { roomChannel } from '../../src/realtime/protocol.js';

// docs/catch-up.md "Position checks": every POSITION_CHECK_INTERVAL_MS each socket receives
// `room:positions {lastSeqs}` for its rooms where they differ from what it was last told, and its
// room subscriptions are made equal to its memberships (except rooms it left itself).
describe('position check', () => {
  const t = useTestServer({ config: { ws: { ...testConfig().ws, positionCheckIntervalMs: 200 } } });
  let admin: TestAgent;
  let alice: TestAgent;
  let sockets: ClientSocket[] = [];

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    alice = await newAgent(t.api);
  });
  afterEach(() => {
    for (const s of sockets) s.disconnect();
    sockets = [];
  });

  const open = async (agent: TestAgent) => {
    const ready = await connectReady(t.server.url, agent.jwt);
    sockets.push(ready.socket);
    return ready;
  };
  /** The server side of a client socket (same process). */
  const serverSocket = (client: ClientSocket) => {
    const found = [...t.server.app.realtime.namespace.sockets.values()].find((s) => s.id === client.id);
    if (!found) throw new Error('server socket not found');
    return found;
  };

  it('tells a socket its rooms\' lastSeq, so a plain client that missed a broadcast sees it and syncs', async () => {
    const room = await newRoom(t.api, admin, [alice]);
    const { socket, hello } = await open(alice);
    expect(hello.lastSeqs).toEqual({ [room.id]: 0 });
    // Nothing new since the hello-ack told it: the periodic runs (every 200 ms here) send nothing.
    const repeated = record(socket, 'room:positions');
    await waitToProveAbsence(700);
    expect(repeated).toEqual([]);

    // A broadcast lost on its way (as when the node's Redis adapter was cut off): the socket is
    // taken out of the room's channel, so the message is stored but never reaches it. In step with
    // the periodic run: once a run has repaired a first removal, the next is an interval away.
    const server = serverSocket(socket);
    server.leave(roomChannel(room.id));
    await waitUntil('a run repaired the subscription', () => server.rooms.has(roomChannel(room.id)), 5000, 2);
    server.leave(roomChannel(room.id));
    const live = record(socket, 'message:new');
    const sent = await sendMessage(t.api, admin, room.id, 'missed');

    // The check subscribes it again and reports the position: the recipe syncs what was missed.
    const positions = await waitFor(socket, 'room:positions', (p: Payload) => p.lastSeqs[room.id] === sent.seq);
    expect(server.rooms.has(roomChannel(room.id))).toBe(true);
    const sync = await emitWithAck(socket, 'room:sync', { roomId: room.id, afterSeq: 0 });
    expect(sync.messages.map((m: Payload) => [m.id, m.seq])).toEqual([[sent.id, sent.seq]]);
    expect(positions.lastSeqs[room.id]).toBe(sync.lastSeq);
    expect(live).toEqual([]);
    expect(repeated).toEqual([positions]); // told once, not again while nothing changes

    // And later broadcasts reach it again.
    const next = waitFor(socket, 'message:new', (m: Payload) => m.body === 'after the repair');
    await sendMessage(t.api, admin, room.id, 'after the repair');
    expect((await next).seq).toBe(sent.seq + 1);
  });

  it('leaves alone a room the client left with room:leave, and drops one that is no longer a membership', async () => {
    const carol = await newAgent(t.api);
    const kept = await newRoom(t.api, admin, [carol]);
    const left = await newRoom(t.api, admin, [carol]);
    const { socket, hello } = await open(carol);
    expect(hello.lastSeqs).toEqual({ [kept.id]: 0, [left.id]: 0 });
    const positions = record<Payload>(socket, 'room:positions');
    await emitWithAck(socket, 'room:leave', { roomId: left.id }).catch(() => undefined);
    await waitUntil('left', () => !serverSocket(socket).rooms.has(roomChannel(left.id)));

    // A stale subscription (a removal this node missed): the socket is in a room it is no member of.
    const foreign = await newRoom(t.api, admin, []);
    serverSocket(socket).join(roomChannel(foreign.id));

    await waitUntil('the stale subscription dropped', () => !serverSocket(socket).rooms.has(roomChannel(foreign.id)), 5000);
    const rooms = serverSocket(socket).rooms;
    expect([kept.id, left.id, foreign.id].map((id) => rooms.has(roomChannel(id)))).toEqual([true, false, false]);
    // Told once that its rooms are now the kept one alone (whether a run came between the leave and
    // the stale join or not), and not again while nothing changes.
    await waitUntil('told its rooms', () => positions.length > 0, 5000);
    await waitToProveAbsence(500);
    expect(positions).toEqual([{ lastSeqs: { [kept.id]: 0 } }]);
  });
});

describe('position check switched off', () => {
  const t = useTestServer({ config: { ws: { ...testConfig().ws, positionCheckIntervalMs: 0 } } });

  it('sends no room:positions', async () => {
    const api = new Api(t.server.url);
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    await newRoom(api, admin, [alice]);
    const { socket } = await connectReady(t.server.url, alice.jwt);
    const positions = record(socket, 'room:positions');
    // Two round trips over the same connection: anything sent before them has arrived.
    await emitWithAck(socket, 'room:list');
    await emitWithAck(socket, 'room:list');
    socket.disconnect();
    expect(positions).toEqual([]);
  });
});
