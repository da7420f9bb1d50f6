import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, scopedSession, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady, emitWithAck, record, roundTrip, waitFor } from '../helpers/ws.js';

// docs/acknowledgements.md: importance, ackRequired, acknowledging, the acks listing, attention.

interface Item { id: string; attention: boolean; importance: string; ack: { required: number; acked: number } | null }

describe('importance and acknowledgements', () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } });
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let outsider: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    [alice, bob, carol, outsider] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
    room = await newRoom(t.api, admin, [alice, bob, carol]);
  });

  const send = async (agent: TestAgent, body: Record<string, unknown>, roomId = room.id): Promise<Item & { seq: number }> => {
    const res = await t.api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  const ack = (agent: TestAgent, messageId: string, roomId = room.id) => t.api.post(`/api/v1/rooms/${roomId}/messages/${messageId}/ack`, {}, { jwt: agent.jwt });
  const acks = (agent: TestAgent, messageId: string, roomId = room.id) => t.api.get(`/api/v1/rooms/${roomId}/messages/${messageId}/acks`, { jwt: agent.jwt });
  const inbox = (agent: TestAgent, query = '') => t.api.get(`/api/v1/inbox${query}`, { jwt: agent.jwt });
  const listed = async (agent: TestAgent, roomId = room.id) =>
    ((await t.api.get('/api/v1/rooms', { jwt: agent.jwt })).body.rooms as { id: string; lastSeq: number; unreadCount: number; attentionCount: number }[]).find((r) => r.id === roomId)!;
  const markAllRead = async (agent: TestAgent, roomId = room.id) => {
    const { lastSeq } = await listed(agent, roomId);
    expect((await t.api.post(`/api/v1/rooms/${roomId}/read`, { seq: lastSeq }, { jwt: agent.jwt })).status).toBe(200);
  };
  const historyItem = async (agent: TestAgent, id: string): Promise<Item> =>
    ((await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: agent.jwt })).body.messages as Item[]).find((m) => m.id === id)!;

  it('importance: normal by default (null too), each word kept, anything else 400 details.importance; every representation carries it', async () => {
    expect(await send(alice, { body: 'plain' })).toMatchObject({ importance: 'normal', ack: null });
    expect(await send(alice, { body: 'null', importance: null })).toMatchObject({ importance: 'normal', ack: null });
    for (const importance of ['low', 'normal', 'high', 'urgent']) expect((await send(alice, { body: importance, importance })).importance).toBe(importance);
    for (const importance of ['URGENT', 'critical', 1, true, '']) {
      const res = await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'bad', importance }, { jwt: alice.jwt });
      expect(res.status, JSON.stringify(importance)).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['importance']);
    }
    for (const ackRequired of ['yes', 1, {}]) {
      const res = await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'bad', ackRequired }, { jwt: alice.jwt });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['ackRequired']);
    }
    const high = await send(alice, { body: 'high one', importance: 'high' });
    expect(await historyItem(bob, high.id)).toMatchObject({ importance: 'high', ack: null });
    const sync = await t.api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=${high.seq - 1}`, { jwt: bob.jwt });
    expect(sync.body.messages[0]).toMatchObject({ id: high.id, importance: 'high', ack: null });
    expect((await inbox(bob)).body.messages.find((m: Item) => m.id === high.id)).toMatchObject({ importance: 'high', ack: null });

    // WebSocket: the send takes it (a bad one is VALIDATION_ERROR), message:new carries it.
    const { socket } = await connectReady(t.server.url, bob.jwt);
    const { socket: aliceSocket } = await connectReady(t.server.url, alice.jwt);
    try {
      const arrived = waitFor<Item>(socket, 'message:new', (m) => m.importance === 'low');
      await emitWithAck(aliceSocket, 'message:send', { roomId: room.id, body: 'over ws', importance: 'low', ackRequired: true, mentions: [bob.id] });
      const lowOne = await arrived;
      expect(lowOne).toMatchObject({ importance: 'low', ack: { required: 1, acked: 0 } });
      expect((await ack(bob, lowOne.id)).status).toBe(200);
      const bad = await emitWithAck<{ error: { code: string; message: string } }>(aliceSocket, 'message:send', { roomId: room.id, body: 'x', importance: 'loud' });
      expect(bad.error.code).toBe('VALIDATION_ERROR');
      expect(bad.error.message).toMatch(/importance/);
    } finally {
      socket.disconnect();
      aliceSocket.disconnect();
    }
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
  });

  it('an urgent message is for the attention of every member but its sender', async () => {
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    const urgent = await send(alice, { body: 'everyone, now', importance: 'urgent' });
    for (const agent of [bob, carol]) {
      expect(await listed(agent)).toMatchObject({ unreadCount: 1, attentionCount: 1 });
      const page = await inbox(agent, '?filter=attention');
      expect(page.body.messages.map((m: Item) => [m.id, m.attention])).toEqual([[urgent.id, true]]);
    }
    expect(await listed(alice)).toMatchObject({ attentionCount: 0 });
    // Read: it leaves the attention, as a mention does.
    await markAllRead(bob);
    expect(await listed(bob)).toMatchObject({ unreadCount: 0, attentionCount: 0 });
    for (const agent of [alice, carol]) await markAllRead(agent);
  });

  it('ackRequired with mentions: the mentioned must acknowledge; once, the same ackedAt again; counts follow', async () => {
    const asked = await send(alice, { body: 'bob, confirm', mentions: [bob.id], ackRequired: true });
    expect(asked.ack).toEqual({ required: 1, acked: 0 });
    expect(await acks(alice, asked.id).then((r) => r.body)).toEqual({ acked: [], pending: [bob.id] });

    const first = await ack(bob, asked.id);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(Object.keys(first.body)).toEqual(['ackedAt']);
    expect(new Date(first.body.ackedAt).toISOString()).toBe(first.body.ackedAt);
    const again = await ack(bob, asked.id);
    expect(again.status).toBe(200);
    expect(again.body.ackedAt).toBe(first.body.ackedAt);
    expect((await historyItem(carol, asked.id)).ack).toEqual({ required: 1, acked: 1 });
    expect((await acks(alice, asked.id)).body).toEqual({ acked: [{ agentId: bob.id, at: first.body.ackedAt }], pending: [] });

    // Another member (not mentioned) and the sender itself: 409.
    for (const agent of [carol, alice]) {
      const res = await ack(agent, asked.id);
      expect(res.status).toBe(409);
    }
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
  });

  it('ackRequired without mentions: every member at the send but the sender; one who joins later is 409', async () => {
    const own = await newRoom(t.api, admin, [alice, bob, carol]);
    const asked = await send(alice, { body: 'all of you, confirm', ackRequired: true }, own.id);
    // The room's members: its creator (admin), alice, bob and carol.
    expect(asked.ack).toEqual({ required: 3, acked: 0 });
    const late = await newAgent(t.api);
    expect((await t.api.post(`/rooms/${own.id}/members`, { agentId: late.id }, { jwt: admin.jwt })).status).toBeLessThan(300);
    expect((await ack(late, asked.id, own.id)).status).toBe(409);
    expect((await acks(alice, asked.id, own.id)).body).toEqual({ acked: [], pending: [admin.id, bob.id, carol.id].sort() });
    expect((await ack(carol, asked.id, own.id)).status).toBe(200);
    expect((await acks(alice, asked.id, own.id)).body).toMatchObject({ acked: [{ agentId: carol.id }], pending: [admin.id, bob.id].sort() });
    const item = ((await t.api.get(`/api/v1/rooms/${own.id}/messages`, { jwt: bob.jwt })).body.messages as Item[]).find((m) => m.id === asked.id)!;
    expect(item.ack).toEqual({ required: 3, acked: 1 });
    expect((await ack(bob, asked.id, own.id)).status).toBe(200);
    for (const agent of [alice, bob, carol]) await markAllRead(agent, own.id);
  });

  it('the bad acknowledgements: no ack asked 409, unknown message 404, non-member 403, direct room 404 to others, bad ids 400', async () => {
    const plain = await send(alice, { body: 'nothing asked' });
    expect((await ack(bob, plain.id)).status).toBe(409);
    const unknown = await ack(bob, '0190a000-0000-7000-8000-000000000000');
    expect(unknown.status).toBe(404);
    const asked = await send(alice, { body: 'asked', ackRequired: true });
    const outside = await ack(outsider, asked.id);
    expect(outside.status).toBe(403);
    expect((await t.api.post(`/api/v1/rooms/${room.id}/messages/not-a-uuid/ack`, {}, { jwt: bob.jwt })).status).toBe(400);
    expect((await t.api.post(`/api/v1/rooms/0190a000-0000-7000-8000-000000000000/messages/${asked.id}/ack`, {}, { jwt: bob.jwt })).status).toBe(404);
    expect((await t.api.post(`/api/v1/rooms/${room.id}/messages/${asked.id}/ack`, {})).status).toBe(401);

    // A direct room: its ack-required message is acknowledged by the other member; an outsider gets 404.
    const dm = await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: alice.jwt });
    expect(dm.status, JSON.stringify(dm.body)).toBeLessThan(300);
    const dmRoom = (dm.body.room?.id ?? dm.body.id) as string;
    const inDm = await send(alice, { body: 'bob, sign here', ackRequired: true }, dmRoom);
    expect(inDm.ack).toEqual({ required: 1, acked: 0 });
    expect((await ack(outsider, inDm.id, dmRoom)).status).toBe(404);
    expect((await acks(outsider, inDm.id, dmRoom)).status).toBe(404);
    expect((await acks(admin, inDm.id, dmRoom)).status).toBe(404);
    expect((await ack(bob, inDm.id, dmRoom)).status).toBe(200);

    // A deleted message asks nothing more: 404.
    const deleted = await send(alice, { body: 'to delete', ackRequired: true });
    expect((await t.api.delete(`/api/v1/rooms/${room.id}/messages/${deleted.id}`, { jwt: alice.jwt })).status).toBe(204);
    expect((await ack(bob, deleted.id)).status).toBe(404);
    expect((await inbox(bob, '?filter=ack')).body.messages.map((m: Item) => m.id)).not.toContain(deleted.id);
    await ack(bob, asked.id);
    await ack(carol, asked.id);
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    for (const agent of [alice, bob]) await markAllRead(agent, dmRoom);
  });

  it('the acks listing: its sender or an admin; 403 to other members', async () => {
    const asked = await send(alice, { body: 'listing', ackRequired: true, mentions: [bob.id, carol.id] });
    await ack(carol, asked.id);
    expect((await acks(alice, asked.id)).status).toBe(200);
    expect((await acks(admin, asked.id)).body).toMatchObject({ acked: [{ agentId: carol.id }], pending: [bob.id] });
    for (const agent of [bob, carol]) {
      const res = await acks(agent, asked.id);
      expect(res.status).toBe(403);
    }
    expect((await acks(outsider, asked.id)).status).toBe(403);
    expect((await acks(alice, '0190a000-0000-7000-8000-000000000000')).status).toBe(404);
    // A message asking nothing lists nobody.
    const plain = await send(alice, { body: 'no ask' });
    expect((await acks(alice, plain.id)).body).toEqual({ acked: [], pending: [] });
    await ack(bob, asked.id);
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
  });

  it('awaiting an acknowledgement stays in the attention whatever the read cursor, until acknowledged; filter=ack lists those', async () => {
    // What earlier tests left awaiting bob's acknowledgement, acknowledged.
    for (const m of (await inbox(bob, '?filter=ack&limit=100')).body.messages as Item[]) expect((await ack(bob, m.id)).status).toBe(200);
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    const asked = await send(alice, { body: 'bob: ack please', ackRequired: true, mentions: [bob.id] });
    const plainMention = await send(alice, { body: 'bob: just fyi', mentions: [bob.id] });
    expect(await listed(bob)).toMatchObject({ unreadCount: 2, attentionCount: 2 });
    await markAllRead(bob);
    // Read: the mention leaves the attention, the acknowledgement asked stays.
    expect(await listed(bob)).toMatchObject({ unreadCount: 0, attentionCount: 1 });
    const attention = await inbox(bob, '?filter=attention');
    expect(attention.body).toMatchObject({ unreadTotal: 0, attentionTotal: 1, hasMore: false });
    expect(attention.body.messages.map((m: Item) => [m.id, m.attention])).toEqual([[asked.id, true]]);
    expect((await inbox(bob)).body).toMatchObject({ messages: [], unreadTotal: 0, attentionTotal: 1 });
    const onlyAck = await inbox(bob, '?filter=ack');
    expect(onlyAck.status).toBe(200);
    expect(onlyAck.body.messages.map((m: Item) => m.id)).toEqual([asked.id]);
    expect(onlyAck.body.messages.map((m: Item) => m.id)).not.toContain(plainMention.id);
    expect((await inbox(carol, '?filter=ack')).body.messages).toEqual([]);

    // Unread and awaiting: counted once.
    const second = await send(alice, { body: 'bob: another', ackRequired: true, mentions: [bob.id] });
    expect(await listed(bob)).toMatchObject({ unreadCount: 1, attentionCount: 2 });
    expect((await inbox(bob, '?filter=attention')).body).toMatchObject({ attentionTotal: 2 });
    expect((await inbox(bob, '?filter=ack')).body.messages.map((m: Item) => m.id)).toEqual([asked.id, second.id]);
    expect((await inbox(bob, '?filter=ack&limit=1')).body).toMatchObject({ hasMore: true });

    // A held filter=ack read is woken by a message that asks the caller, not by a plain one.
    await ack(bob, asked.id);
    await ack(bob, second.id);
    expect(await listed(bob)).toMatchObject({ attentionCount: 0 });
    expect((await inbox(bob, '?filter=ack')).body).toMatchObject({ messages: [], attentionTotal: 0 });
    const held = inbox(bob, '?filter=ack&wait=10');
    await waitUntil('the held read', () => t.server.app.ctx.inboxWaiters.size === 1);
    await send(alice, { body: 'nothing asked of bob' });
    const third = await send(alice, { body: 'bob: third', ackRequired: true, mentions: [bob.id] });
    const woken = await held;
    expect(woken.body.messages.map((m: Item) => m.id)).toEqual([third.id]);
    expect((await t.api.get('/api/v1/inbox?filter=nope', { jwt: bob.jwt })).status).toBe(400);
    await ack(bob, third.id);
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
  });

  it('WebSocket message:ack and MCP ack_message; message:acked reaches the sender\'s sockets only', async () => {
    const asked = await send(alice, { body: 'both of you', ackRequired: true, mentions: [bob.id, carol.id] });
    const { socket: senderSocket } = await connectReady(t.server.url, alice.jwt);
    const { socket: bobSocket } = await connectReady(t.server.url, bob.jwt);
    const { socket: carolSocket } = await connectReady(t.server.url, carol.jwt);
    const mcp = await connectMcp(t.server.url, carol.jwt);
    try {
      const seenBySender = record<{ roomId: string; messageId: string; agentId: string; at: string }>(senderSocket, 'message:acked');
      const seenByOthers = [...record(bobSocket, 'message:acked'), ...record(carolSocket, 'message:acked')];
      const acked = await emitWithAck<{ ackedAt: string }>(bobSocket, 'message:ack', { roomId: room.id, messageId: asked.id });
      expect(Object.keys(acked)).toEqual(['ackedAt']);
      await waitUntil('message:acked of bob', () => seenBySender.length === 1);
      expect(seenBySender[0]).toEqual({ roomId: room.id, messageId: asked.id, agentId: bob.id, at: acked.ackedAt });
      // Again: the same ackedAt, nothing announced.
      expect(await emitWithAck(bobSocket, 'message:ack', { roomId: room.id, messageId: asked.id })).toEqual(acked);
      const tool = await callTool(mcp, 'ack_message', { room: room.slug, messageId: asked.id });
      expect(tool.isError).toBe(false);
      expect(tool.data.ackedAt).toEqual(expect.any(String));
      await waitUntil('message:acked of carol', () => seenBySender.length === 2);
      await roundTrip(senderSocket);
      await roundTrip(bobSocket);
      await roundTrip(carolSocket);
      expect(seenBySender.map((e) => e.agentId)).toEqual([bob.id, carol.id]);
      expect(seenByOthers).toEqual([]);

      // Errors: the WebSocket and MCP codes.
      const plain = await send(alice, { body: 'nothing asked over ws' });
      expect((await emitWithAck<{ error: { code: string } }>(bobSocket, 'message:ack', { roomId: room.id, messageId: plain.id })).error.code).toBe('CONFLICT');
      expect((await emitWithAck<{ error: { code: string } }>(bobSocket, 'message:ack', { roomId: room.id, messageId: 'x' })).error.code).toBe('VALIDATION_ERROR');
      expect((await emitWithAck<{ error: { code: string } }>(bobSocket, 'message:ack', { roomId: room.id, messageId: '0190a000-0000-7000-8000-000000000000' })).error.code).toBe('NOT_FOUND');
      expect((await callTool(mcp, 'ack_message', { room: room.slug, messageId: plain.id })).text).toMatch(/^CONFLICT: /);
      expect((await callTool(mcp, 'ack_message', { room: room.slug, messageId: '0190a000-0000-7000-8000-000000000000' })).text).toMatch(/^NOT_FOUND: /);
      expect((await callTool(mcp, 'ack_message', { room: 'no-such-room', messageId: plain.id })).text).toMatch(/^ROOM_NOT_FOUND: /);
      expect((await callTool(mcp, 'send_message', { room: room.slug, body: 'x', importance: 'loud' })).text).toMatch(/^VALIDATION_ERROR: .*importance/);
      const viaMcp = await callTool(mcp, 'send_message', { room: room.slug, body: 'urgent via mcp', importance: 'urgent', ackRequired: true });
      expect(viaMcp.data.message).toMatchObject({ importance: 'urgent', ack: { required: 3, acked: 0 } });
      expect(viaMcp.text).toBeDefined();
      await ack(alice, viaMcp.data.message.id);
      await ack(bob, viaMcp.data.message.id);
    } finally {
      await mcp.close();
      for (const s of [senderSocket, bobSocket, carolSocket]) s.disconnect();
    }
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
  });

  describe('webhooks', () => {
    let receiver: WebhookReceiver;
    beforeAll(async () => {
      receiver = await startWebhookReceiver();
      const created = await t.api.post(`/api/v1/agents/${alice.id}/webhooks`, { url: `${receiver.url}/alice`, events: ['message.acked'], mode: 'always' }, { jwt: alice.jwt });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const bobs = await t.api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: `${receiver.url}/bob`, events: ['message.attention', 'message.acked'], mode: 'always' }, { jwt: bob.jwt });
      expect(bobs.status).toBe(201);
    });
    afterAll(() => receiver?.close());

    it('message.acked goes to the sender\'s endpoints listing it, once per acknowledgement; urgent is message.attention', async () => {
      const asked = await send(alice, { body: 'webhook ack', ackRequired: true, importance: 'urgent' });
      const first = await ack(bob, asked.id);
      await ack(bob, asked.id);
      await waitUntil('message.acked', () => receiver.received.some((r) => r.path === '/alice'));
      await waitUntil('message.attention to bob', () => receiver.received.some((r) => r.path === '/bob'));
      await waitToProveAbsence(2_000);
      const toAlice = receiver.received.filter((r) => r.path === '/alice').map((r) => JSON.parse(r.body));
      expect(toAlice).toEqual([{ type: 'message.acked', timestamp: expect.any(String), data: { roomId: room.id, messageId: asked.id, agentId: bob.id, at: first.body.ackedAt } }]);
      const toBob = receiver.received.filter((r) => r.path === '/bob').map((r) => JSON.parse(r.body));
      expect(toBob.map((b) => [b.type, b.data.message?.id])).toEqual([['message.attention', asked.id]]);
      expect(toBob[0].data.message).toMatchObject({ importance: 'urgent', ack: { required: 3, acked: 0 } });
      const log = await t.api.get(`/api/v1/agents/${alice.id}/webhooks`, { jwt: alice.jwt });
      expect(log.status).toBe(200);
      await ack(carol, asked.id);
      await waitUntil('the second message.acked', () => receiver.received.filter((r) => r.path === '/alice').length === 2);
    });

    it('mode offline: nothing while the sender has a live socket, delivered once it has none', async () => {
      const offline = await t.api.post(`/api/v1/agents/${carol.id}/webhooks`, { url: `${receiver.url}/carol-offline`, events: ['message.acked'] }, { jwt: carol.jwt });
      expect(offline.status).toBe(201);
      const toCarol = () => receiver.received.filter((r) => r.path === '/carol-offline').map((r) => JSON.parse(r.body) as { data: { messageId: string; agentId: string } });
      const online = await send(carol, { body: 'carol asks, online', ackRequired: true, mentions: [bob.id] });
      const { socket } = await connectReady(t.server.url, carol.jwt);
      try {
        expect((await ack(bob, online.id)).status).toBe(200);
        await waitToProveAbsence(2_000);
        expect(toCarol()).toEqual([]);
      } finally {
        socket.disconnect();
      }
      const away = await send(carol, { body: 'carol asks, away', ackRequired: true, mentions: [bob.id] });
      await waitUntil('carol offline', async () => ((await t.api.get(`/api/v1/rooms/${room.id}/members`, { jwt: bob.jwt })).body.members as { agentId: string; online: boolean }[])
        .some((m) => m.agentId === carol.id && !m.online));
      expect((await ack(bob, away.id)).status).toBe(200);
      await waitUntil('message.acked to carol', () => toCarol().length === 1);
      expect(toCarol()[0]!.data).toMatchObject({ messageId: away.id, agentId: bob.id });
    });
  });

  it('a scoped token with messages:read acknowledges; without it, refused', async () => {
    const asked = await send(alice, { body: 'scoped', ackRequired: true, mentions: [bob.id] });
    const session = (actions: string[]): Promise<string> => scopedSession(t.api, bob, { actions }, bob.jwt);
    const writeOnly = await session(['messages:write']);
    expect((await t.api.post(`/api/v1/rooms/${room.id}/messages/${asked.id}/ack`, {}, { jwt: writeOnly })).status).toBe(403);
    const readOnly = await session(['messages:read']);
    expect((await t.api.post(`/api/v1/rooms/${room.id}/messages/${asked.id}/ack`, {}, { jwt: readOnly })).status).toBe(200);
  });

  it('sendMessage helper messages carry ack null', async () => {
    const plain = await sendMessage(t.api, alice, room.id, 'helper');
    expect((await historyItem(bob, plain.id)).ack).toBeNull();
  });
});
