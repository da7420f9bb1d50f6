import { beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import type { Payload } from '../helpers/ws.js';

// docs/catch-up.md: GET /api/v1/inbox?limit=L&wait=S.

describe('GET /api/v1/inbox', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let reader: TestAgent;
  let writer: TestAgent;
  let rooms: TestRoom[];

  const inbox = (agent: TestAgent, query = '') => api.get(`/api/v1/inbox${query}`, { jwt: agent.jwt });
  /** Marks everything read in the reader's rooms, so the inbox starts empty. */
  const readAll = async (agent: TestAgent): Promise<void> => {
    const listed = (await api.get('/api/v1/rooms', { jwt: agent.jwt })).body.rooms as Payload[];
    for (const room of listed.filter((r) => r.readSeq !== undefined)) {
      expect((await api.post(`/api/v1/rooms/${room.id}/read`, { seq: room.lastSeq }, { jwt: agent.jwt })).status).toBe(200);
    }
  };

  beforeAll(async () => {
    admin = await newAdmin(api);
    [reader, writer] = [await newAgent(api), await newAgent(api)];
    rooms = [await newRoom(api, admin, [reader, writer]), await newRoom(api, admin, [reader, writer])];
  });

  it('answers at once with the unread messages of all rooms, oldest first, not the caller\'s own, without marking them read', async () => {
    await readAll(reader);
    const sent = [];
    sent.push(await sendMessage(api, writer, rooms[0]!.id, 'a'));
    await sendMessage(api, reader, rooms[0]!.id, 'my own');
    sent.push(await sendMessage(api, writer, rooms[1]!.id, 'b'));
    sent.push(await sendMessage(api, admin, rooms[0]!.id, 'c'));
    const res = await inbox(reader);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      messages: sent.map((m) => ({ id: m.id, roomId: expect.any(String), senderId: expect.any(String), body: expect.any(String), createdAt: m.createdAt, seq: m.seq, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, attention: false })),
      hasMore: false,
      unreadTotal: 3,
      attentionTotal: 0,
    });
    expect(res.body.messages.map((m: Payload) => m.body)).toEqual(['a', 'b', 'c']);
    // Reading marks nothing read.
    expect((await inbox(reader)).body.unreadTotal).toBe(3);
    const page = await inbox(reader, '?limit=2');
    expect(page.body).toMatchObject({ hasMore: true, unreadTotal: 3 });
    expect(page.body.messages.map((m: Payload) => m.body)).toEqual(['a', 'b']);
    // Marking one room read removes its messages.
    await api.post(`/api/v1/rooms/${rooms[0]!.id}/read`, { seq: sent[2]!.seq }, { jwt: reader.jwt });
    expect((await inbox(reader)).body).toMatchObject({ unreadTotal: 1, messages: [expect.objectContaining({ body: 'b' })] });
  });

  it('wait: held while nothing is unread, answered at once when another agent\'s message arrives', async () => {
    await readAll(reader);
    const started = Date.now();
    const held = inbox(reader, '?wait=10');
    await waitUntil('the request held', () => server.app.ctx.inboxWaiters.size === 1);
    expect(server.app.ctx.inboxWaiters.size).toBe(1);
    const sent = await sendMessage(api, writer, rooms[1]!.id, 'wake up');
    const res = await held;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ messages: [expect.objectContaining({ id: sent.id, body: 'wake up', seq: sent.seq })], hasMore: false, unreadTotal: 1, attentionTotal: 0 });
    expect(server.app.ctx.inboxWaiters.size).toBe(0);
  });

  it('wait: the caller\'s own message does not wake it; the wait ends empty', async () => {
    await readAll(reader);
    const started = Date.now();
    const held = inbox(reader, '?wait=1.5');
    await waitUntil('the request held', () => server.app.ctx.inboxWaiters.size === 1);
    await sendMessage(api, reader, rooms[0]!.id, 'talking to myself');
    const res = await held;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(res.body).toEqual({ messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 });
  });

  it('wait: nothing arrives, the wait ends with an empty answer', async () => {
    await readAll(reader);
    const started = Date.now();
    const res = await inbox(reader, '?wait=1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(res.body).toEqual({ messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 });
  });

  it('wait: a message in a room the caller is not in does not wake it', async () => {
    await readAll(reader);
    const elsewhere = await newRoom(api, admin, [writer]);
    const held = inbox(reader, '?wait=1');
    await waitUntil('the request held', () => server.app.ctx.inboxWaiters.size === 1);
    await sendMessage(api, writer, elsewhere.id, 'not for the reader');
    expect((await held).body).toEqual({ messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 });
  });

  it('a client that goes away withdraws its waiter', async () => {
    await readAll(reader);
    const controller = new AbortController();
    const held = fetch(`${server.url}/api/v1/inbox?wait=20`, { headers: { authorization: `Bearer ${reader.jwt}` }, signal: controller.signal }).catch(() => 'aborted');
    await waitUntil('the request held', () => server.app.ctx.inboxWaiters.size === 1);
    expect(server.app.ctx.inboxWaiters.size).toBe(1);
    controller.abort();
    expect(await held).toBe('aborted');
    await waitUntil('the waiter withdrawn', () => server.app.ctx.inboxWaiters.size === 0, 3000);
    expect(server.app.ctx.inboxWaiters.size).toBe(0);
  });

  it('validates limit and wait; 401 without a JWT', async () => {
    for (const query of ['?limit=0', '?limit=101', '?limit=x']) {
      const res = await inbox(reader, query);
      expect(res.status, query).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), details: { limit: 'must be a whole number from 1 to 100' } });
    }
    for (const query of ['?wait=31', '?wait=-1', '?wait=abc', '?wait=1e1']) {
      const res = await inbox(reader, query);
      expect(res.status, query).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), details: { wait: 'must be a number of seconds from 0 to 30' } });
    }
    expect((await inbox(reader, '?limit=100&wait=0')).status).toBe(200);
    const anonymous = await api.get('/api/v1/inbox');
    expect(anonymous.status).toBe(401);
  });
});

describe('GET /api/v1/inbox on shutdown', () => {
  it('closing the server answers held requests at once', async () => {
    const server = await startTestServer();
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    const reader = await newAgent(api);
    await newRoom(api, admin, [reader]);
    const held = api.get('/api/v1/inbox?wait=30', { jwt: reader.jwt });
    await waitUntil('the request held', () => server.app.ctx.inboxWaiters.size === 1);
    expect(server.app.ctx.inboxWaiters.size).toBe(1);
    const started = Date.now();
    const closed = server.close();
    const res = await held;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 });
    await closed;
  });
});
