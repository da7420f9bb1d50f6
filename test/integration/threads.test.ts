import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, newAdmin, newAgent, newRoom, uniqueName, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady, waitFor } from '../helpers/ws.js';

const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

describe('threads: replyTo, threadId, replyCount, lastReplyAt (docs/threads-and-edits.md)', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  let other: TestRoom;
  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    room = await newRoom(api, admin, [alice, bob]);
    other = await newRoom(api, admin, [alice, bob]);
  });

  const send = (roomId: string, body: Record<string, unknown>, jwt = alice.jwt) => api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt });

  it('a reply gets its root as threadId (a reply to a reply too); the root counts its replies when read', async () => {
    const root = await send(room.id, { body: 'root' });
    expect(root.status).toBe(201);
    expect(root.body).toMatchObject({ threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [] });
    const r1 = await send(room.id, { body: 'first reply', replyTo: root.body.id }, bob.jwt);
    expect(r1.status).toBe(201);
    expect(r1.body).toMatchObject({ replyTo: root.body.id, threadId: root.body.id, editedAt: null, deletedAt: null });
    expect(r1.body).not.toHaveProperty('replyCount');
    expect(r1.body).not.toHaveProperty('lastReplyAt');
    const r2 = await send(room.id, { body: 'reply to the reply', replyTo: r1.body.id });
    expect(r2.body).toMatchObject({ replyTo: r1.body.id, threadId: root.body.id });

    const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
    const byId = new Map(history.body.messages.map((m: { id: string }) => [m.id, m]));
    expect(byId.get(root.body.id)).toMatchObject({ replyCount: 2, lastReplyAt: r2.body.createdAt, threadId: null });
    expect(byId.get(r1.body.id)).not.toHaveProperty('replyCount');
    const sync = await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: bob.jwt });
    expect(sync.body.messages[0]).toMatchObject({ id: root.body.id, replyCount: 2 });
    expect(sync.body.messages[1]).toMatchObject({ id: r1.body.id, threadId: root.body.id });

    const inbox = await api.get('/api/v1/inbox', { jwt: bob.jwt });
    expect(inbox.body.messages.find((m: { id: string }) => m.id === root.body.id)).toMatchObject({ replyCount: 2, threadId: null });
    const found = await api.get(`/api/v1/search/messages?q=reply&roomId=${room.id}`, { jwt: bob.jwt });
    expect(found.body.results.map((m: { threadId: string }) => m.threadId)).toEqual([root.body.id, root.body.id]);

    const mcp = await connectMcp(server.url, bob.jwt);
    try {
      const read = await callTool(mcp, 'read_messages', { room: room.id, afterSeq: 0 });
      expect(read.data.messages[0]).toMatchObject({ id: root.body.id, threadId: null, replyCount: 2, lastReplyAt: r2.body.createdAt, editedAt: null, deletedAt: null });
      expect(read.text).toContain('2 replies');
      const sent = await callTool(mcp, 'send_message', { room: room.id, body: 'via mcp', replyTo: r2.body.id });
      expect(sent.data.message).toMatchObject({ threadId: root.body.id });
    } finally {
      await mcp.close();
    }
  });

  it('WebSocket message:new carries threadId, and replyCount/lastReplyAt on a root only', async () => {
    const { socket } = await connectReady(server.url, bob.jwt);
    try {
      const rootSeen = waitFor(socket, 'message:new', (m: { body: string }) => m.body === 'ws root');
      const root = await send(room.id, { body: 'ws root' });
      expect(await rootSeen).toMatchObject({ id: root.body.id, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [] });
      const replySeen = waitFor(socket, 'message:new', (m: { body: string }) => m.body === 'ws reply');
      await send(room.id, { body: 'ws reply', replyTo: root.body.id });
      const reply = await replySeen;
      expect(reply).toMatchObject({ threadId: root.body.id, replyTo: root.body.id, editedAt: null, deletedAt: null });
      expect(reply).not.toHaveProperty('replyCount');
    } finally {
      socket.disconnect();
    }
  });

  it('replyTo must be a message of the same room: 400 details.replyTo (WS VALIDATION_ERROR)', async () => {
    const elsewhere = await send(other.id, { body: 'in the other room' });
    for (const replyTo of [UNKNOWN_ID, elsewhere.body.id]) {
      const res = await send(room.id, { body: 'x', replyTo });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['replyTo']);
    }
    const { socket } = await connectReady(server.url, alice.jwt);
    try {
      const ack = await new Promise((resolve) => socket.emit('message:send', { roomId: room.id, body: 'x', replyTo: UNKNOWN_ID }, resolve));
      expect(ack).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
    } finally {
      socket.disconnect();
    }
  });
});

describe('a thread: GET .../messages/:messageId/thread, message:thread, read_replies', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let outsider: TestAgent;
  let room: TestRoom;
  let root: { id: string; seq: number };
  const replies: { id: string; seq: number; body: string }[] = [];
  let unrelated: { id: string };
  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob, outsider] = await Promise.all([newAgent(api), newAgent(api), newAgent(api)]);
    room = await newRoom(api, admin, [alice, bob]);
    root = (await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'the root' }, { jwt: alice.jwt })).body;
    unrelated = (await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'not in the thread' }, { jwt: bob.jwt })).body;
    for (let i = 0; i < 5; i++) {
      const replyTo = i === 0 ? root.id : replies[i - 1]!.id;
      const sent = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: `reply ${i}`, replyTo }, { jwt: i % 2 === 0 ? bob.jwt : alice.jwt });
      replies.push(sent.body);
    }
  });

  const thread = (messageId: string, query = '', jwt = bob.jwt, roomId = room.id) => api.get(`/api/v1/rooms/${roomId}/messages/${messageId}/thread${query}`, { jwt });

  it('gives {root, replies oldest first, hasMore} from the root or any reply; afterSeq and limit page it', async () => {
    const all = await thread(root.id);
    expect(all.status).toBe(200);
    expect(all.body.root).toMatchObject({ id: root.id, threadId: null, replyCount: 5, body: 'the root' });
    expect(all.body.replies.map((r: { body: string }) => r.body)).toEqual(['reply 0', 'reply 1', 'reply 2', 'reply 3', 'reply 4']);
    expect(all.body.replies.every((r: { threadId: string }) => r.threadId === root.id)).toBe(true);
    expect(all.body.hasMore).toBe(false);
    expect((await thread(replies[3]!.id)).body).toEqual(all.body);

    const first = await thread(root.id, '?limit=2');
    expect(first.body.replies.map((r: { id: string }) => r.id)).toEqual([replies[0]!.id, replies[1]!.id]);
    expect(first.body.hasMore).toBe(true);
    const next = await thread(replies[0]!.id, `?afterSeq=${replies[1]!.seq}&limit=2`);
    expect(next.body.replies.map((r: { id: string }) => r.id)).toEqual([replies[2]!.id, replies[3]!.id]);
    const last = await thread(root.id, `?afterSeq=${replies[3]!.seq}`);
    expect(last.body).toMatchObject({ hasMore: false });
    expect(last.body.replies.map((r: { id: string }) => r.id)).toEqual([replies[4]!.id]);

    const alone = await thread(unrelated.id);
    expect(alone.body).toMatchObject({ root: { id: unrelated.id, replyCount: 0, lastReplyAt: null }, replies: [], hasMore: false });
  });

  it('400 for a bad limit, afterSeq or id; 404 for an unknown room or message (or one of another room); 401 without a JWT', async () => {
    for (const query of ['?limit=0', '?limit=101', '?limit=x', '?afterSeq=-1', '?afterSeq=1.5', '?afterSeq=x']) {
      const res = await thread(root.id, query);
      expect(res.status, query).toBe(400);
      expect(Object.keys(res.body.details), query).toEqual([query.slice(1, query.indexOf('='))]);
    }
    expect((await thread(root.id, '?limit=100')).status).toBe(200);
    expect((await thread('nope')).status).toBe(400);
    expect((await thread(root.id, '', bob.jwt, UNKNOWN_ID)).status).toBe(404);
    const unknown = await thread(UNKNOWN_ID);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('Message not found');
    const other = await newRoom(api, admin, [bob]);
    expect((await thread(root.id, '', bob.jwt, other.id)).status).toBe(404);
    expect((await api.get(`/api/v1/rooms/${room.id}/messages/${root.id}/thread`)).status).toBe(401);
  });

  it('open mode: readable by any agent, as history is', async () => {
    const res = await thread(root.id, '', outsider.jwt);
    expect(res.status).toBe(200);
    expect(res.body.replies).toHaveLength(5);
  });

  it('message:thread acknowledges the same with WS items; errors VALIDATION_ERROR, ROOM_NOT_FOUND, NOT_FOUND', async () => {
    const { socket } = await connectReady(server.url, bob.jwt);
    try {
      const ask = (payload: Record<string, unknown>) => new Promise<Record<string, unknown>>((resolve) => socket.emit('message:thread', payload, resolve));
      const page = await ask({ roomId: room.id, messageId: replies[2]!.id, afterSeq: replies[0]!.seq, limit: 3, requestId: 't1' });
      expect(page).toMatchObject({ root: { id: root.id, authorAgentId: alice.id, replyCount: 5, threadId: null }, hasMore: true });
      expect((page.replies as { id: string; authorAgentId: string }[]).map((r) => r.id)).toEqual([replies[1]!.id, replies[2]!.id, replies[3]!.id]);
      expect((page.replies as { authorAgentId: string }[])[0]!.authorAgentId).toBe(alice.id);
      expect(await ask({ roomId: room.id, messageId: root.id, limit: 0 })).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
      expect(await ask({ roomId: room.id, messageId: 'x' })).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
      expect(await ask({ roomId: UNKNOWN_ID, messageId: root.id })).toMatchObject({ error: { code: 'ROOM_NOT_FOUND' } });
      expect(await ask({ roomId: room.id, messageId: UNKNOWN_ID })).toMatchObject({ error: { code: 'NOT_FOUND' } });
    } finally {
      socket.disconnect();
    }
  });

  it('MCP read_replies gives {root, replies, hasMore}', async () => {
    const mcp = await connectMcp(server.url, bob.jwt);
    try {
      const res = await callTool(mcp, 'read_replies', { room: room.id, messageId: replies[4]!.id, limit: 4 });
      expect(res.isError).toBe(false);
      expect(res.data.root).toMatchObject({ id: root.id, replyCount: 5 });
      expect(res.data.replies.map((r: { id: string }) => r.id)).toEqual(replies.slice(0, 4).map((r) => r.id));
      expect(res.data.hasMore).toBe(true);
      expect(res.text).toContain('the root');
      expect(res.text).toContain(`afterSeq ${replies[3]!.seq}`);
      const missing = await callTool(mcp, 'read_replies', { room: room.id, messageId: UNKNOWN_ID });
      expect(missing.isError).toBe(true);
      expect(missing.text).toMatch(/^NOT_FOUND/);
    } finally {
      await mcp.close();
    }
  });
});

describe('threads in strict mode', () => {
  const { server, api } = useTestServer({ config: { authzMode: 'strict' } });
  it('a thread is readable by members only (403 to others)', async () => {
    const admin = await bootstrapAdmin(server.app.ctx.database.db, api);
    const [member, outsider] = [await newAgent(api, { asJwt: admin.jwt }), await newAgent(api, { asJwt: admin.jwt })];
    const room = await api.post('/rooms', { slug: uniqueName('room'), name: 'R', members: [member.id] }, { jwt: admin.jwt });
    const root = await api.post(`/api/v1/rooms/${room.body.id}/messages`, { body: 'strict root' }, { jwt: member.jwt });
    const path = `/api/v1/rooms/${room.body.id}/messages/${root.body.id}/thread`;
    expect((await api.get(path, { jwt: member.jwt })).status).toBe(200);
    expect((await api.get(path, { jwt: outsider.jwt })).status).toBe(403);
  });
});

describe('threads with webhook deliveries in the send\'s transaction', () => {
  let receiver: WebhookReceiver;
  const { api } = useTestServer(async () => {
    receiver = await startWebhookReceiver();
    return { config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } };
  });
  afterAll(() => receiver.close());

  it('webhook payloads carry threadId; the root counts replies sent in batches with deliveries', async () => {
    const admin = await newAdmin(api);
    const [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    const room = await newRoom(api, admin, [alice, bob]);
    const hook = await api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: `${receiver.url}/hook`, mode: 'always' }, { jwt: bob.jwt });
    expect(hook.status).toBe(201);
    const root = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'hooked root' }, { jwt: alice.jwt });
    const replies = await Promise.all([1, 2, 3].map((i) => api.post(`/api/v1/rooms/${room.id}/messages`, { body: `hooked reply ${i}`, replyTo: root.body.id }, { jwt: alice.jwt })));
    expect(replies.map((r) => r.status)).toEqual([201, 201, 201]);
    const latest = replies.map((r) => r.body.createdAt as string).sort().at(-1);
    await waitUntil('four deliveries', () => receiver.received.length >= 4);
    const payloads = receiver.received.map((r) => JSON.parse(r.body) as { data: { message: { body: string; threadId: string | null; replyCount?: number } } });
    expect(payloads.find((p) => p.data.message.body === 'hooked root')!.data.message).toMatchObject({ threadId: null, replyCount: 0 });
    for (const p of payloads.filter((p) => p.data.message.body.startsWith('hooked reply'))) expect(p.data.message.threadId).toBe(root.body.id);
    const history = await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: bob.jwt });
    expect(history.body.messages[0]).toMatchObject({ id: root.body.id, replyCount: 3, lastReplyAt: latest });
  });
});
