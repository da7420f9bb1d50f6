import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, emitWithAck, type ClientSocket } from '../helpers/ws.js';

// docs/protocol.md, Mentions: at most 50 distinct agents, each a member of the room.

describe('mentions', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let outsider: TestAgent;
  let room: TestRoom;
  let sockets: ClientSocket[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob, outsider] = [await newAgent(api), await newAgent(api), await newAgent(api)];
    room = await newRoom(api, admin, [alice, bob]);
  });
  afterEach(() => {
    for (const s of sockets) s.disconnect();
    sockets = [];
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
  });

  const send = (body: unknown, jwt = alice.jwt, roomId = room.id) => api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt });

  it('keeps a repeated id once (any case) and stores members', async () => {
    const res = await send({ body: 'hi both', mentions: [bob.id, bob.id.toUpperCase(), admin.id] });
    expect(res.status).toBe(201);
    expect(res.body.mentions).toEqual([bob.id, admin.id]);
  });

  it('400 details.mentions for a non-member or an unknown agent (the published contract); nothing stored', async () => {
    for (const mentions of [[bob.id, outsider.id], ['0190a5d0-0000-7000-8000-000000000000']]) {
      const res = await send({ body: 'not stored', mentions });
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual({ mentions: expect.stringContaining(mentions[mentions.length - 1]!) });
    }
    const page = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: alice.jwt });
    expect(page.body.messages.map((m: { body: string }) => m.body)).not.toContain('not stored');
  });

  it('at most 50 distinct agents: 50 pass, 51 are refused, 100 repeats of one pass', async () => {
    const many = await Promise.all(Array.from({ length: 51 }, () => newAgent(api)));
    const big = await newRoom(api, admin, [alice, ...many]);
    const ids = many.map((a) => a.id);
    expect((await send({ body: 'fifty', mentions: ids.slice(0, 50) }, alice.jwt, big.id)).status).toBe(201);
    const refused = await send({ body: 'fifty-one', mentions: ids }, alice.jwt, big.id);
    expect(refused.status).toBe(400);
    expect(refused.body.details).toEqual({ mentions: expect.stringContaining('50') });
    const repeats = await send({ body: 'one', mentions: Array.from({ length: 100 }, () => ids[0]!) }, alice.jwt, big.id);
    expect(repeats.status).toBe(201);
    expect(repeats.body.mentions).toEqual([ids[0]]);
  });

  it('WebSocket message:send: VALIDATION_ERROR naming mentions', async () => {
    const { socket } = await connectReady(server.url, alice.jwt);
    sockets.push(socket);
    const ack = await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'x', mentions: [outsider.id] });
    expect(ack).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringMatching(new RegExp(`mentions.*${outsider.id}`)) } });
  });

  it('MCP send_message takes ids or names; an unknown name is NOT_FOUND, a non-member VALIDATION_ERROR', async () => {
    const mcp = await connectMcp(server.url, alice.jwt);
    clients.push(mcp);
    const sent = await callTool(mcp, 'send_message', { room: room.slug, body: 'by name', mentions: [bob.name, admin.id] });
    expect(sent.isError).toBe(false);
    expect(sent.data.message.mentions).toEqual([bob.id, admin.id]);
    const unknown = await callTool(mcp, 'send_message', { room: room.slug, body: 'x', mentions: ['no-such-agent-here'] });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toMatch(/^NOT_FOUND: .*no-such-agent-here/);
    const outside = await callTool(mcp, 'send_message', { room: room.slug, body: 'x', mentions: [outsider.name] });
    expect(outside.isError).toBe(true);
    expect(outside.text).toMatch(/^VALIDATION_ERROR: .*mentions/);
  });
});
