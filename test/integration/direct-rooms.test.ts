import { describe, expect, it } from 'vitest';
import { bootstrapAdmin, newAdmin, newAgent, newRoom, scopedSession, sendMessage, type Api, type TestAgent } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, emitWithAck, type Payload } from '../helpers/ws.js';

// docs/protocol.md, Direct rooms: POST /api/v1/direct-rooms and the privacy of a direct room, on the
// suite's engine (AMS_TEST_DATABASE).

const open = (api: Api, caller: TestAgent, agentId: unknown) => api.post('/api/v1/direct-rooms', { agentId }, { jwt: caller.jwt });

/** What an agent that is not one of the two members sees, from every angle: nothing. */
async function expectInvisible(api: Api, url: string, viewer: TestAgent, roomId: string, word: string, messageId: string): Promise<void> {
  const jwt = { jwt: viewer.jwt };
  expect(((await api.get('/rooms', jwt)).body as Payload[]).map((r) => r.id)).not.toContain(roomId);
  expect(((await api.get('/api/v1/rooms', jwt)).body.rooms as Payload[]).map((r) => r.id)).not.toContain(roomId);
  for (const path of [`/api/v1/rooms/${roomId}/messages`, `/api/v1/rooms/${roomId}/messages?afterSeq=0`, `/api/v1/rooms/${roomId}/members`]) {
    expect(await api.get(path, jwt), path).toMatchObject({ status: 404, body: { error: 'Room not found' } });
  }
  expect((await api.post(`/api/v1/rooms/${roomId}/messages`, { body: 'intruding' }, jwt)).status).toBe(404);
  // Its messages: threads, edits, deletions and activity answer as for an unknown room.
  expect((await api.get(`/api/v1/rooms/${roomId}/messages/${messageId}/thread`, jwt)).status).toBe(404);
  expect((await api.request('PATCH', `/api/v1/rooms/${roomId}/messages/${messageId}`, { body: { body: 'rewritten' }, ...jwt })).status).toBe(404);
  expect((await api.request('DELETE', `/api/v1/rooms/${roomId}/messages/${messageId}`, jwt)).status).toBe(404);
  expect((await api.post(`/api/v1/rooms/${roomId}/activity`, { state: 'typing' }, jwt)).status).toBe(404);
  expect(((await api.get('/api/v1/inbox?filter=attention', jwt)).body.messages as Payload[]).map((m) => m.roomId)).not.toContain(roomId);
  expect((await api.post(`/api/v1/rooms/${roomId}/read`, { seq: 0 }, jwt)).status).toBe(404);
  const search = await api.get(`/api/v1/search/messages?q=${word}`, jwt);
  expect(search.status).toBe(200);
  expect(search.body.results).toEqual([]);
  expect((await api.get(`/api/v1/search/messages?q=${word}&roomId=${roomId}`, jwt)).status).toBe(404);
  expect(((await api.get('/api/v1/inbox', jwt)).body.messages as Payload[]).map((m) => m.roomId)).not.toContain(roomId);
  expect((await api.post(`/rooms/${roomId}/members`, { agentId: viewer.id }, jwt)).status).toBe(404);
  expect((await api.delete(`/rooms/${roomId}/members/${viewer.id}`, jwt)).status).toBe(404);
  const { socket } = await connectReady(url, viewer.jwt);
  try {
    const list = await emitWithAck(socket, 'room:list');
    expect((list.rooms as Payload[]).map((r) => r.id)).not.toContain(roomId);
    expect(await emitWithAck(socket, 'room:join', { roomId })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
    expect(await emitWithAck(socket, 'room:sync', { roomId, afterSeq: 0 })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
    expect(await emitWithAck(socket, 'message:history', { roomId })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
    expect(await emitWithAck(socket, 'message:thread', { roomId, messageId })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
    expect(await emitWithAck(socket, 'message:send', { roomId, body: 'intruding' })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
    expect(await emitWithAck(socket, 'activity:set', { roomId, state: 'typing' })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
  } finally {
    socket.disconnect();
  }
  // MCP: the same services, the same answers.
  const mcp = await connectMcp(url, viewer.jwt);
  try {
    expect(((await callTool(mcp, 'list_rooms')).data.rooms as Payload[]).map((r) => r.id)).not.toContain(roomId);
    for (const [tool, args] of [
      ['read_messages', { room: roomId }],
      ['read_replies', { room: roomId, messageId }],
      ['send_message', { room: roomId, body: 'intruding' }],
      ['edit_message', { room: roomId, messageId, body: 'rewritten' }],
      ['delete_message', { room: roomId, messageId }],
      ['set_activity', { room: roomId, state: 'typing' }],
      ['search_messages', { query: word, room: roomId }],
    ] as const) {
      const outcome = await callTool(mcp, tool, args);
      expect(outcome.isError, tool).toBe(true);
      expect(outcome.text, tool).toMatch(/^(ROOM_NOT_FOUND|NOT_FOUND)/);
    }
    expect((await callTool(mcp, 'search_messages', { query: word })).data.results).toEqual([]);
    expect(((await callTool(mcp, 'fetch_inbox')).data.messages as Payload[]).map((m) => m.roomId)).not.toContain(roomId);
  } finally {
    await mcp.close();
  }
}

describe('direct rooms (open mode)', () => {
  const t = useTestServer();

  it('201 the first time, 200 with the same room afterwards from either side; slug, name, kind, createdBy', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const first = await open(t.api, alice, bob.id);
    expect(first.status).toBe(201);
    const room = first.body;
    expect(room).toEqual({
      id: expect.any(String), slug: `dm-${room.id}`, name: [alice.name, bob.name].sort().join(', '), kind: 'direct',
      createdBy: alice.id, createdAt: expect.any(String), lastSeq: 0, retentionDays: null, legalHold: false,
    });
    expect(await open(t.api, alice, bob.id)).toMatchObject({ status: 200, body: room });
    expect(await open(t.api, bob, alice.id.toUpperCase())).toMatchObject({ status: 200, body: room });
    const members = await t.api.get(`/api/v1/rooms/${room.id}/members`, { jwt: bob.jwt });
    expect((members.body.members as Payload[]).map((m) => m.agentId).sort()).toEqual([alice.id, bob.id].sort());
    const audit = await t.server.app.ctx.database.db.selectFrom('audit_log').select('event').where('subject_id', '=', room.id).execute();
    expect(audit.map((a) => a.event)).toEqual(['room-created']);
  });

  it('two racing opens, one from each side, make one room', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const answers = await Promise.all([open(t.api, alice, bob.id), open(t.api, bob, alice.id), open(t.api, alice, bob.id)]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 201]);
  });

  it('errors: 401 without a JWT, 400 not a UUID or oneself, 404 unknown, 403 disabled, 403 a token without messages:write', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    expect((await t.api.post('/api/v1/direct-rooms', { agentId: bob.id })).status).toBe(401);
    expect(await open(t.api, alice, 'nope')).toMatchObject({ status: 400, body: { details: { agentId: expect.any(String) } } });
    expect(await open(t.api, alice, alice.id)).toMatchObject({ status: 400, body: { details: { agentId: expect.any(String) } } });
    expect((await open(t.api, alice, '01900000-0000-7000-8000-000000000000')).status).toBe(404);
    const carol = await newAgent(t.api);
    expect((await t.api.post(`/api/v1/agents/${carol.id}/disable`)).status).toBe(200);
    expect((await open(t.api, alice, carol.id)).status).toBe(403);
    const readOnly = await scopedSession(t.api, alice, { actions: ['messages:read', 'rooms:read'] });
    expect((await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: readOnly })).status).toBe(403);
    const writer = await scopedSession(t.api, alice, { actions: ['messages:write'] });
    expect((await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: writer })).status).toBe(201);
  });

  it('is seen, read and written by its two members only: a third agent and an admin get 404 from every angle', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const outsider = await newAgent(t.api);
    const admin = await newAdmin(t.api);
    const word = `secret${Date.now().toString(36)}`;
    const { body: room } = await open(t.api, alice, bob.id);
    const sent = await sendMessage(t.api, alice, room.id, `the ${word} plan`);

    // The members see it everywhere.
    expect(((await t.api.get('/rooms', { jwt: bob.jwt })).body as Payload[]).find((r) => r.id === room.id)).toMatchObject({ kind: 'direct' });
    expect(((await t.api.get('/api/v1/rooms', { jwt: bob.jwt })).body.rooms as Payload[]).find((r) => r.id === room.id)).toMatchObject({ kind: 'direct', unreadCount: 1 });
    expect((await t.api.get(`/api/v1/search/messages?q=${word}`, { jwt: bob.jwt })).body.results).toHaveLength(1);
    expect(((await t.api.get('/api/v1/inbox', { jwt: bob.jwt })).body.messages as Payload[]).map((m) => m.roomId)).toContain(room.id);
    expect((await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt })).status).toBe(200);
    const { socket } = await connectReady(t.server.url, bob.jwt);
    try {
      expect((await emitWithAck(socket, 'room:list')).rooms.find((r: Payload) => r.id === room.id)).toMatchObject({ kind: 'direct' });
    } finally {
      socket.disconnect();
    }
    // Group rooms carry kind "group"; an anonymous listing shows no direct room.
    const group = await newRoom(t.api, admin, [alice]);
    const anonymous = (await t.api.get('/rooms')).body as Payload[];
    expect(anonymous.find((r) => r.id === group.id)).toMatchObject({ kind: 'group' });
    expect(anonymous.map((r) => r.id)).not.toContain(room.id);

    await expectInvisible(t.api, t.server.url, outsider, room.id, word, sent.id);
    await expectInvisible(t.api, t.server.url, admin, room.id, word, sent.id);
    // Nothing of it changed.
    const history = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
    expect(history.body.messages).toMatchObject([{ id: sent.id, body: `the ${word} plan`, editedAt: null, deletedAt: null }]);
  });

  it('its membership cannot change: 409 to its members', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const carol = await newAgent(t.api);
    const { body: room } = await open(t.api, alice, bob.id);
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: carol.id }, { jwt: alice.jwt })).status).toBe(409);
    expect((await t.api.delete(`/rooms/${room.id}/members/${bob.id}`, { jwt: alice.jwt })).status).toBe(409);
    // Without a JWT nobody is known to be a member.
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: carol.id })).status).toBe(404);
  });
});

describe('direct rooms (strict mode)', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });

  it('opens as in open mode; private to its members, admins included; member changes 409 for members before the admin rule', async () => {
    const root = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    const alice = await newAgent(t.api, { asJwt: root.jwt });
    const bob = await newAgent(t.api, { asJwt: root.jwt });
    const outsider = await newAgent(t.api, { asJwt: root.jwt });
    const first = await open(t.api, alice, bob.id);
    expect(first.status).toBe(201);
    expect((await open(t.api, bob, alice.id)).status).toBe(200);
    const room = first.body;
    const word = `strictsecret${Date.now().toString(36)}`;
    const sent = await sendMessage(t.api, bob, room.id, `a ${word}`);
    expect(((await t.api.get('/api/v1/rooms', { jwt: alice.jwt })).body.rooms as Payload[]).map((r) => r.id)).toContain(room.id);

    await expectInvisible(t.api, t.server.url, outsider, room.id, word, sent.id);
    await expectInvisible(t.api, t.server.url, root, room.id, word, sent.id);
    // A member that is no admin: 409 rather than strict mode's 403.
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: outsider.id }, { jwt: alice.jwt })).status).toBe(409);
    expect((await t.api.delete(`/rooms/${room.id}/members/${bob.id}`, { jwt: bob.jwt })).status).toBe(409);
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: outsider.id })).status).toBe(401);
  });
});
