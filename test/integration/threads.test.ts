import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
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
    expect(root.body).toMatchObject({ threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null });
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
      expect(await rootSeen).toMatchObject({ id: root.body.id, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null });
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
