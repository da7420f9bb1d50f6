import { beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, newAgent, scopedSession, sendMessage, uniqueName, type TestAgent } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { connectReady, disconnected, emitWithAck, record, roundTrip, waitFor, type Payload } from '../helpers/ws.js';

/**
 * A token's `rooms` (docs/scopes.md): a room outside them is refused as strict mode refuses a
 * non-member, and left out of every listing, auto-join, sync, inbox and search; sockets follow only
 * the memberships their token reaches.
 */
describe.each(['open', 'strict'] as const)('scoped tokens: rooms (%s mode)', (mode) => {
  const t = useTestServer({ config: { authzMode: mode } });
  let root: TestAgent;
  let agent: TestAgent;
  let other: TestAgent;
  let inScope: string;
  let outOfScope: string;
  /** A session of `agent` limited to `inScope`. */
  let scoped: string;

  const createRoom = async (members: TestAgent[]): Promise<string> => {
    const res = await t.api.post('/rooms', { slug: uniqueName('room'), name: 'scoped', members: members.map((m) => m.id) }, { jwt: root.jwt });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const addMember = async (roomId: string, member: TestAgent): Promise<void> => {
    expect((await t.api.post(`/rooms/${roomId}/members`, { agentId: member.id }, { jwt: root.jwt })).status).toBe(201);
  };
  const refusedLikeNonMember = (res: { status: number; body: Payload }): void => {
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String) });
  };
  const FORBIDDEN_ACK = { error: { code: 'FORBIDDEN', message: expect.any(String) } };

  beforeAll(async () => {
    root = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    agent = await newAgent(t.api, { asJwt: root.jwt });
    other = await newAgent(t.api, { asJwt: root.jwt });
    inScope = await createRoom([agent, other]);
    outOfScope = await createRoom([agent, other]);
    await sendMessage(t.api, other, inScope, 'alpha inside');
    await sendMessage(t.api, other, outOfScope, 'alpha outside');
    scoped = await scopedSession(t.api, agent, { rooms: [inScope] }, root.jwt);
  });

  it('lists only the token\'s rooms: GET /rooms, GET /api/v1/rooms, room:list', async () => {
    const ids = (rooms: { id: string }[]): string[] => rooms.map((r) => r.id);
    // The unscoped session sees both, so the filter is the token's.
    expect(ids((await t.api.get('/api/v1/rooms', { jwt: agent.jwt })).body.rooms)).toEqual(expect.arrayContaining([inScope, outOfScope]));
    expect(ids((await t.api.get('/api/v1/rooms', { jwt: scoped })).body.rooms)).toEqual([inScope]);
    expect(ids((await t.api.get('/rooms', { jwt: scoped })).body)).toEqual([inScope]);
    const { socket } = await connectReady(t.server.url, scoped);
    expect(ids((await emitWithAck(socket, 'room:list', {})).rooms)).toEqual([inScope]);
    socket.disconnect();
  });

  it('refuses a room outside them (403 FORBIDDEN, as a non-member in strict mode) on REST; an unknown room stays 404', async () => {
    const outside = outOfScope;
    refusedLikeNonMember(await t.api.get(`/api/v1/rooms/${outside}/messages`, { jwt: scoped }));
    refusedLikeNonMember(await t.api.get(`/api/v1/rooms/${outside}/messages?afterSeq=0`, { jwt: scoped }));
    refusedLikeNonMember(await t.api.post(`/api/v1/rooms/${outside}/messages`, { body: 'no' }, { jwt: scoped }));
    refusedLikeNonMember(await t.api.post(`/api/v1/rooms/${outside}/read`, { seq: 1 }, { jwt: scoped }));
    refusedLikeNonMember(await t.api.get(`/api/v1/search/messages?q=alpha&roomId=${outside}`, { jwt: scoped }));
    const unknown = '00000000-0000-7000-8000-000000000000';
    expect((await t.api.get(`/api/v1/rooms/${unknown}/messages`, { jwt: scoped })).status).toBe(404);
    // Inside, everything works.
    expect((await t.api.get(`/api/v1/rooms/${inScope}/messages?afterSeq=0`, { jwt: scoped })).body.messages).toHaveLength(1);
    expect((await t.api.post(`/api/v1/rooms/${inScope}/messages`, { body: 'inside' }, { jwt: scoped })).status).toBe(201);
  });

  it('refuses a room outside them on the WebSocket', async () => {
    const { socket } = await connectReady(t.server.url, scoped);
    for (const [event, payload] of [
      ['message:send', { roomId: outOfScope, body: 'no' }],
      ['message:history', { roomId: outOfScope }],
      ['room:sync', { roomId: outOfScope, afterSeq: 0 }],
      ['room:read', { roomId: outOfScope, seq: 1 }],
      ['room:join', { roomId: outOfScope }],
    ] as const) {
      expect(await emitWithAck(socket, event, payload)).toEqual(FORBIDDEN_ACK);
    }
    expect(await emitWithAck(socket, 'room:sync', { roomId: inScope, afterSeq: 0 })).toMatchObject({ messages: expect.arrayContaining([expect.objectContaining({ body: 'alpha inside' })]) });
    socket.disconnect();
  });

  it('the inbox and search cover only the token\'s rooms', async () => {
    const inbox = (await t.api.get('/api/v1/inbox', { jwt: scoped })).body;
    expect(inbox.messages.map((m: Payload) => m.roomId)).toEqual([inScope]);
    expect(inbox.unreadTotal).toBe(1);
    expect((await t.api.get('/api/v1/inbox', { jwt: agent.jwt })).body.unreadTotal).toBe(2);
    const found = (await t.api.get('/api/v1/search/messages?q=alpha', { jwt: scoped })).body.results;
    expect(found.map((m: Payload) => m.body)).toEqual(['alpha inside']);
    expect((await t.api.get('/api/v1/search/messages?q=alpha', { jwt: agent.jwt })).body.results).toHaveLength(2);
    // An empty rooms list reaches nothing.
    const nowhere = await scopedSession(t.api, agent, { rooms: [] }, root.jwt);
    expect((await t.api.get('/api/v1/inbox', { jwt: nowhere })).body).toEqual({ messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 });
    expect((await t.api.get('/api/v1/search/messages?q=alpha', { jwt: nowhere })).body.results).toEqual([]);
    expect((await t.api.get('/api/v1/rooms', { jwt: nowhere })).body.rooms).toEqual([]);
  });

  it('over MCP: list_rooms and fetch_inbox leave the other rooms out, the room tools refuse them (FORBIDDEN)', async () => {
    const client = await connectMcp(t.server.url, scoped);
    try {
      expect((await callTool(client, 'list_rooms')).data.rooms.map((r: Payload) => r.id)).toEqual([inScope]);
      const inbox = await callTool(client, 'fetch_inbox');
      expect(inbox.data.messages.map((m: Payload) => m.roomId)).toEqual([inScope]);
      expect((await callTool(client, 'search_messages', { query: 'alpha' })).data.results.map((m: Payload) => m.body)).toEqual(['alpha inside']);
      for (const [tool, args] of [
        ['read_messages', { room: outOfScope }],
        ['read_messages', { room: outOfScope, afterSeq: 0 }],
        ['send_message', { room: outOfScope, body: 'no' }],
        ['mark_read', { room: outOfScope, seq: 1 }],
        ['search_messages', { query: 'alpha', room: outOfScope }],
      ] as const) {
        const refused = await callTool(client, tool, args);
        expect(refused, `${tool} ${JSON.stringify(args)}`).toMatchObject({ isError: true, text: expect.stringMatching(/^FORBIDDEN: /), data: { error: { code: 'FORBIDDEN' } } });
      }
      expect((await callTool(client, 'read_messages', { room: inScope, afterSeq: 0 })).data.messages.map((m: Payload) => m.body)).toContain('alpha inside');
    } finally {
      await client.close();
    }
  });

  it('auto-joins only the token\'s rooms: hello-ack rooms and lastSeqs, message:new', async () => {
    const { socket, hello } = await connectReady(t.server.url, scoped);
    expect(hello.rooms).toEqual([inScope]);
    expect(Object.keys(hello.lastSeqs)).toEqual([inScope]);
    const received = record(socket, 'message:new');
    const delivered = waitFor(socket, 'message:new', (m: Payload) => m.body === 'for the scoped socket');
    await sendMessage(t.api, other, outOfScope, 'not for the scoped socket');
    await sendMessage(t.api, other, inScope, 'for the scoped socket');
    await delivered;
    expect(received.map((m) => m.roomId)).toEqual([inScope]);
    socket.disconnect();
  });

  it('opens no direct room outside the token\'s rooms (REST and MCP); a direct room among them opens as before', async () => {
    const stranger = await newAgent(t.api, { asJwt: root.jwt });
    const refused = await t.api.post('/api/v1/direct-rooms', { agentId: stranger.id }, { jwt: scoped });
    refusedLikeNonMember(refused);
    // Nothing was created: the unscoped session opens it now, as new.
    const opened = await t.api.post('/api/v1/direct-rooms', { agentId: stranger.id }, { jwt: agent.jwt });
    expect(opened.status).toBe(201);
    // Existing, but still outside the token's rooms: refused all the same.
    refusedLikeNonMember(await t.api.post('/api/v1/direct-rooms', { agentId: stranger.id }, { jwt: scoped }));
    const mcp = await connectMcp(t.server.url, scoped);
    try {
      const viaMcp = await callTool(mcp, 'send_direct_message', { to: stranger.name, body: 'hello' });
      expect(viaMcp.isError).toBe(true);
      expect(viaMcp.text).toMatch(/^FORBIDDEN/);
    } finally {
      await mcp.close();
    }
    // A token whose rooms include the direct room reaches it.
    const withDirect = await scopedSession(t.api, agent, { rooms: [opened.body.id] }, root.jwt);
    const again = await t.api.post('/api/v1/direct-rooms', { agentId: stranger.id }, { jwt: withDirect });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(opened.body.id);
  });

  it('reads tasks only in the token\'s rooms, on every interface (REST get and list, MCP, A2A, task:updated); sockets without tasks:read get no task:updated', async () => {
    const inside = await t.api.post('/api/v1/tasks', { assignee: agent.id, title: 'inside', room: inScope }, { jwt: other.jwt });
    expect(inside.status, JSON.stringify(inside.body)).toBe(201);
    // In the two agents' direct room: outside the token's rooms.
    const outside = await t.api.post('/api/v1/tasks', { assignee: agent.id, title: 'outside the grant' }, { jwt: other.jwt });
    expect(outside.status).toBe(201);
    expect(outside.body.roomId).not.toBe(inScope);

    refusedLikeNonMember(await t.api.get(`/api/v1/tasks/${outside.body.id}`, { jwt: scoped }));
    expect((await t.api.get(`/api/v1/tasks/${inside.body.id}`, { jwt: scoped })).status).toBe(200);
    const listed = (await t.api.get('/api/v1/tasks', { jwt: scoped })).body.tasks.map((task: { id: string }) => task.id);
    expect(listed).toContain(inside.body.id);
    expect(listed).not.toContain(outside.body.id);
    // The unscoped session lists both: the filter is the token's.
    expect((await t.api.get('/api/v1/tasks', { jwt: agent.jwt })).body.tasks.map((task: { id: string }) => task.id)).toEqual(expect.arrayContaining([inside.body.id, outside.body.id]));

    const mcp = await connectMcp(t.server.url, scoped);
    try {
      const got = await callTool(mcp, 'get_task', { taskId: outside.body.id });
      expect(got.isError).toBe(true);
      expect(got.text).toMatch(/^FORBIDDEN/);
      expect(got.text).not.toContain('outside the grant');
    } finally {
      await mcp.close();
    }
    const a2a = await t.api.request('POST', `/a2a/${other.name}`, {
      rawBody: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: outside.body.id } }),
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' }, jwt: scoped,
    });
    expect(a2a.body.error).toBeDefined();
    expect(JSON.stringify(a2a.body)).not.toContain('outside the grant');

    // task:updated: the scoped socket hears the task inside only; a socket whose token lacks
    // tasks:read hears none; the unscoped socket hears both.
    const noTasks = await scopedSession(t.api, agent, { actions: ['messages:read', 'messages:write'] }, root.jwt);
    const sockets = await Promise.all([scoped, noTasks, agent.jwt].map((jwt) => connectReady(t.server.url, jwt)));
    const [heardScoped, heardNoTasks, heardAll] = sockets.map(({ socket }) => record<{ task: { id: string } }>(socket, 'task:updated'));
    try {
      for (const task of [outside.body, inside.body]) {
        expect((await t.api.post(`/api/v1/tasks/${task.id}/state`, { state: 'working' }, { jwt: agent.jwt })).status).toBe(200);
      }
      await waitUntil('the unscoped socket hears both moves', () => heardAll!.length === 2);
      await waitToProveAbsence(300);
      expect(heardScoped!.map((e) => e.task.id)).toEqual([inside.body.id]);
      expect(heardNoTasks).toEqual([]);
    } finally {
      for (const { socket } of sockets) socket.disconnect();
    }
  });

  it('a socket follows the memberships its token reaches, added and removed, and no others', async () => {
    const member = await newAgent(t.api, { asJwt: root.jwt });
    const later = await createRoom([other]);
    const never = await createRoom([other]);
    const jwt = await scopedSession(t.api, member, { rooms: [later] }, root.jwt);
    const { socket: limited } = await connectReady(t.server.url, jwt);
    const { socket: full } = await connectReady(t.server.url, member.jwt);
    const seen = { limited: record(limited, 'message:new'), full: record(full, 'message:new') };
    await addMember(never, member);
    await addMember(later, member);
    const delivered = [limited, full].map((s) => waitFor(s, 'message:new', (m: Payload) => m.body === 'later'));
    await sendMessage(t.api, other, never, 'never');
    await sendMessage(t.api, other, later, 'later');
    await Promise.all(delivered);
    expect(seen.limited.map((m) => m.body)).toEqual(['later']);
    expect(seen.full.map((m) => m.body)).toEqual(['never', 'later']);

    expect((await t.api.delete(`/rooms/${later}/members/${member.id}`, { jwt: root.jwt })).status).toBe(204);
    const stillFull = waitFor(full, 'message:new', (m: Payload) => m.body === 'still for full');
    await sendMessage(t.api, other, later, 'after removal');
    await sendMessage(t.api, other, never, 'still for full');
    await stillFull;
    await roundTrip(limited);
    expect(seen.limited.map((m) => m.body)).toEqual(['later']);
    limited.disconnect();
    full.disconnect();
  });

  it('without messages:read a socket is subscribed to no room, room:join included', async () => {
    const jwt = await scopedSession(t.api, agent, { actions: ['rooms:read', 'messages:write'] }, root.jwt);
    const { socket, hello } = await connectReady(t.server.url, jwt);
    expect(hello).toMatchObject({ rooms: [], lastSeqs: {} });
    const received = record(socket, 'message:new');
    expect(await emitWithAck(socket, 'room:join', { roomId: inScope })).toEqual({ ok: true });
    // Its own send is acknowledged, yet not delivered back to it.
    expect(await emitWithAck(socket, 'message:send', { roomId: inScope, body: 'write only' })).toMatchObject({ messageId: expect.any(String) });
    await sendMessage(t.api, other, inScope, 'unseen');
    await roundTrip(socket);
    expect(received).toEqual([]);
    socket.disconnect();
  });

  it('a scoped socket ends with its agent', async () => {
    const doomed = await newAgent(t.api, { asJwt: root.jwt });
    for (const scopes of [{ actions: [] }, { rooms: [inScope] }]) {
      const { socket } = await connectReady(t.server.url, await scopedSession(t.api, doomed, scopes, root.jwt));
      const gone = disconnected(socket);
      expect((await t.api.post(`/api/v1/agents/${doomed.id}/disable`, undefined, { jwt: root.jwt })).status).toBe(200);
      expect(await gone).toBe('io server disconnect');
      expect((await t.api.post(`/api/v1/agents/${doomed.id}/enable`, undefined, { jwt: root.jwt })).status).toBe(200);
    }
  });
});
