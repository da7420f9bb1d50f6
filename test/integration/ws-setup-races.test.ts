import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence } from '../helpers/wait.js';
import { connect, connectReady, expectAuthFailed, record, type ClientSocket } from '../helpers/ws.js';
import { roomChannel } from '../../src/realtime/protocol.js';

// A WebSocket handshake reads its agent's state once (the middleware, fresh) and its rooms once
// (the setup), and reads again only when this node heard of a change in between
// (realtime/connection/connection.ts). These tests make the change land in that window.
describe('changes that land during a WebSocket handshake', () => {
  const t = useTestServer();
  let admin: TestAgent;
  const sockets: ClientSocket[] = [];
  const restore: (() => void)[] = [];

  beforeAll(async () => {
    admin = await newAdmin(t.api);
  });
  afterEach(() => {
    for (const undo of restore.splice(0)) undo();
    for (const s of sockets.splice(0)) s.disconnect();
  });

  it('a membership removed after the setup read the rooms, before the socket joined them: the socket is not left in the room', async () => {
    const bob = await newAgent(t.api);
    const kept = await newRoom(t.api, admin, [bob]);
    const removed = await newRoom(t.api, admin, [bob]);
    const rooms = t.server.app.ctx.rooms;
    const listForSocket = rooms.listForSocket.bind(rooms);
    let reads = 0;
    let removal = 0;
    rooms.listForSocket = async (principal) => {
      const list = await listForSocket(principal);
      if (principal.agentId === bob.id && ++reads === 1) {
        // Committed and followed by this node after the read, before the socket joins its rooms.
        removal = (await t.api.delete(`/rooms/${removed.id}/members/${bob.id}`, { jwt: admin.jwt })).status;
      }
      return list;
    };
    restore.push(() => { rooms.listForSocket = listForSocket; });

    const { socket, hello } = await connectReady(t.server.url, bob.jwt);
    sockets.push(socket);
    expect(removal).toBe(204);
    expect(hello.rooms.sort()).toEqual([kept.id, removed.id].sort()); // the first read's answer
    const live = record(socket, 'message:new');
    await sendMessage(t.api, admin, kept.id, 'in the room kept');
    await sendMessage(t.api, admin, removed.id, 'in the room left');
    await waitToProveAbsence(300);
    expect(reads).toBe(2); // read again, because a removal was followed in the window
    expect(live.map((m) => m.body)).toEqual(['in the room kept']);
    const server = [...t.server.app.realtime.namespace.sockets.values()].find((s) => s.id === socket.id)!;
    expect(server.rooms.has(roomChannel(removed.id))).toBe(false);
  });

  it('reads the rooms once when nothing changed meanwhile', async () => {
    const carol = await newAgent(t.api);
    await newRoom(t.api, admin, [carol]);
    const rooms = t.server.app.ctx.rooms;
    const listForSocket = rooms.listForSocket.bind(rooms);
    let reads = 0;
    rooms.listForSocket = (principal) => {
      if (principal.agentId === carol.id) reads++;
      return listForSocket(principal);
    };
    restore.push(() => { rooms.listForSocket = listForSocket; });
    const { socket } = await connectReady(t.server.url, carol.jwt);
    sockets.push(socket);
    expect(reads).toBe(1);
  });

  it('an agent disabled after the middleware read its state, before the socket joined its channels: the handshake is refused', async () => {
    const dave = await newAgent(t.api);
    await newRoom(t.api, admin, [dave]);
    const sessionAuth = t.server.app.ctx.sessionAuth;
    const authenticate = sessionAuth.authenticate.bind(sessionAuth);
    sessionAuth.authenticate = async (jwt, options) => {
      const principal = await authenticate(jwt, options);
      if (principal.agentId === dave.id) {
        expect(options).toEqual({ fresh: true }); // a handshake reads the state, not the cache
        expect((await t.api.post(`/api/v1/agents/${dave.id}/disable`, undefined, { jwt: admin.jwt })).status).toBe(200);
      }
      return principal;
    };
    restore.push(() => { sessionAuth.authenticate = authenticate; });

    const socket = connect(t.server.url, dave.jwt);
    sockets.push(socket);
    expect(await expectAuthFailed(socket)).toMatch(/disabled/i);
  });
});
