import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import {
  connect, connectReady, disconnected, emitWithAck, record, roundTrip, waitFor,
  type ClientSocket, type Payload,
} from '../helpers/ws.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { PRESENCE_WINDOW_MS } from '../../src/realtime/presence/room-subscriptions.js';

describe('WebSocket namespace /agents', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let room: TestRoom;
  let sockets: ClientSocket[] = [];

  const open = async (agent: TestAgent, options: Parameters<typeof connectReady>[2] = {}) => {
    const ready = await connectReady(server.url, agent.jwt, options);
    sockets.push(ready.socket);
    return ready;
  };
  const connectionsOf = (agent: TestAgent) => server.app.ctx.presence.connectionCount(agent.id);

  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob, carol] = [await newAgent(api), await newAgent(api), await newAgent(api)];
    room = await newRoom(api, admin, [alice, bob]);
  });
  afterEach(async () => {
    for (const s of sockets) s.disconnect();
    sockets = [];
    // Each test starts with nobody online: the server has processed every disconnect.
    await waitUntil('every agent of the previous test offline', async () => (await server.app.ctx.presence.onlineAgents([admin.id, alice.id, bob.id, carol.id])).size === 0);
  });

  describe('handshake', () => {
    it('acknowledges with agent:hello-ack {agentId, rooms} and auto-joins every room of the agent', async () => {
      const second = await newRoom(api, admin, [alice]);
      const { socket, hello } = await open(alice);
      expect(hello).toEqual({ agentId: alice.id, rooms: expect.any(Array), lastSeqs: expect.any(Object) });
      expect([...hello.rooms].sort()).toEqual([room.id, second.id].sort());
      expect(Object.keys(hello.lastSeqs).sort()).toEqual([room.id, second.id].sort());
      expect(hello.lastSeqs[second.id]).toBe(0);
      // Auto-joined: a message to the second room arrives without any room:join.
      const arrived = waitFor(socket, 'message:new', (m) => m.roomId === second.id);
      await sendMessage(api, alice, second.id, 'auto-joined');
      expect((await arrived).body).toBe('auto-joined');
    });

    it('accepts the JWT as auth.token as well as the query token', async () => {
      const { hello } = await open(bob, { tokenIn: 'auth' });
      expect(hello.agentId).toBe(bob.id);
    });

    it('hands an agent with no rooms an empty list', async () => {
      const { hello } = await open(carol);
      expect(hello).toEqual({ agentId: carol.id, rooms: [], lastSeqs: {} });
    });

    it('processes an event sent right after connect, behind the auto-join', async () => {
      const socket = connect(server.url, alice.jwt);
      sockets.push(socket);
      const hello = waitFor(socket, 'agent:hello-ack');
      // Emitted before hello-ack arrived: the server queues it behind the setup.
      const ack = await emitWithAck(socket, 'room:list', {});
      expect(ack.rooms.map((r: Payload) => r.id)).toContain(room.id);
      await hello;
    });
  });

  describe('room:list', () => {
    it('acknowledges {rooms: [{id, slug, name, lastSeq, readSeq, unreadCount, attentionCount}]} with the rooms the agent is a member of', async () => {
      const { socket } = await open(bob);
      const listed = { id: room.id, slug: room.slug, name: room.name, kind: 'group', lastSeq: expect.any(Number), readSeq: expect.any(Number), unreadCount: expect.any(Number), attentionCount: expect.any(Number) };
      expect(await emitWithAck(socket, 'room:list', { requestId: 'r1' })).toEqual({ rooms: [listed] });
      // The payload is optional.
      expect(await emitWithAck(socket, 'room:list')).toEqual({ rooms: [listed] });
    });

    it('without an acknowledgement callback answers with an error event carrying the requestId', async () => {
      const { socket } = await open(bob);
      const error = waitFor(socket, 'error');
      socket.emit('room:list', { requestId: 'no-ack' });
      expect(await error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining('acknowledgement'), requestId: 'no-ack' });
    });
  });

  describe('message:send', () => {
    it('stores the message, acknowledges {messageId, seq} and sends message:new to every member, sender included, not to others', async () => {
      const { socket: a } = await open(alice);
      const { socket: b } = await open(bob);
      const { socket: c } = await open(carol);
      const seenByCarol = record(c, 'message:new');
      const toAlice = waitFor(a, 'message:new', (m) => m.body === 'hello room');
      const toBob = waitFor(b, 'message:new', (m) => m.body === 'hello room');

      const ack = await emitWithAck(a, 'message:send', { roomId: room.id, body: 'hello room', requestId: 'm1' });
      expect(ack).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
      const expected = { id: ack.messageId, roomId: room.id, authorAgentId: alice.id, body: 'hello room', createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/), seq: ack.seq, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null };
      expect(await toAlice).toEqual(expected);
      expect(await toBob).toEqual(expected);

      await roundTrip(c);
      expect(seenByCarol).toEqual([]);

      // Stored, and visible over REST under the REST field names.
      const history = await api.get(`/api/v1/rooms/${room.id}/messages?limit=1`, { jwt: bob.jwt });
      expect(history.body.messages[0]).toMatchObject({ id: ack.messageId, senderId: alice.id, body: 'hello room', seq: ack.seq });
    });

    it('without an acknowledgement still broadcasts; the sender sees its own message:new', async () => {
      const { socket: a } = await open(alice);
      const own = waitFor(a, 'message:new', (m) => m.body === 'fire and forget');
      a.emit('message:send', { roomId: room.id, body: 'fire and forget' });
      expect((await own).authorAgentId).toBe(alice.id);
    });

    it('delivers messages sent over REST as message:new', async () => {
      const { socket: b } = await open(bob);
      const arrived = waitFor(b, 'message:new', (m) => m.body === 'via REST');
      const sent = await sendMessage(api, alice, room.id, 'via REST');
      expect(await arrived).toEqual({ id: sent.id, roomId: room.id, authorAgentId: alice.id, body: 'via REST', createdAt: sent.createdAt, seq: sent.seq, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null });
    });

    it('stores, acknowledges and broadcasts one connection\'s messages in the order they were sent', async () => {
      const { socket: a } = await open(alice);
      const { socket: b } = await open(bob);
      const seen = record(b, 'message:new');
      const bodies = Array.from({ length: 8 }, (_, i) => `ordered ${i}`);
      const acks = await Promise.all(bodies.map((body) => emitWithAck(a, 'message:send', { roomId: room.id, body })));
      await waitUntil('every ordered message', () => seen.filter((m) => m.body.startsWith('ordered ')).length === bodies.length);
      expect(seen.filter((m) => m.body.startsWith('ordered ')).map((m) => m.body)).toEqual(bodies);
      const ids = acks.map((ack: Payload) => ack.messageId as string);
      expect([...ids].sort()).toEqual(ids); // UUID v7: storage order is send order
    });

    it('delivers a burst committed together complete and in order, also on a connection upgraded from long-polling', async () => {
      const { socket: a } = await open(alice);
      // socket.io-client's default: long-polling first, then the upgrade to WebSocket, whose writes
      // the server coalesces (several frames due at once leave in one system call).
      const { socket: b } = await open(bob, { transports: ['polling', 'websocket'] });
      if (b.io.engine.transport.name !== 'websocket') await new Promise((resolve) => b.io.engine.once('upgrade', resolve));
      const seenByA = record(a, 'message:new');
      const seenByB = record(b, 'message:new');
      const bodies = Array.from({ length: 25 }, (_, i) => `burst ${i}`); // within 30 events/s per connection
      const acks = await Promise.all(bodies.map((body) => emitWithAck(a, 'message:send', { roomId: room.id, body })));
      expect(acks).toEqual(bodies.map(() => ({ messageId: expect.any(String), seq: expect.any(Number) })));
      // Committed together, numbered in send order without a gap.
      const seqs = acks.map((ack: Payload) => ack.seq as number);
      expect(seqs).toEqual(seqs.map((_: number, i: number) => seqs[0]! + i));
      const burst = (seen: Payload[]) => seen.filter((m) => m.body.startsWith('burst ')).map((m) => m.body as string);
      await waitUntil('the whole burst on both sockets', () => burst(seenByA).length === bodies.length && burst(seenByB).length === bodies.length);
      expect(burst(seenByA)).toEqual(bodies);
      expect(burst(seenByB)).toEqual(bodies);
      expect(b.io.engine.transport.name).toBe('websocket');
    });

    it('carries mentions and replyTo when sent, and answers a clientMsgId repeat with the original id', async () => {
      const { socket: a } = await open(alice);
      const first = await emitWithAck(a, 'message:send', { roomId: room.id, body: 'first' });
      const received = waitFor(a, 'message:new', (m) => m.body === 'reply');
      const reply = await emitWithAck(a, 'message:send', { roomId: room.id, body: 'reply', mentions: [bob.id], replyTo: first.messageId, clientMsgId: 'c-1' });
      expect(await received).toMatchObject({ id: reply.messageId, mentions: [bob.id], replyTo: first.messageId });
      // A retry repeats the whole send; the same clientMsgId with other content is a conflict.
      expect(await emitWithAck(a, 'message:send', { roomId: room.id, body: 'reply', mentions: [bob.id], replyTo: first.messageId, clientMsgId: 'c-1' }))
        .toEqual({ messageId: reply.messageId, seq: reply.seq });
      expect(await emitWithAck(a, 'message:send', { roomId: room.id, body: 'another body', clientMsgId: 'c-1' }))
        .toEqual({ error: { code: 'CONFLICT', message: expect.any(String) } });
    });
  });

  describe('message:history', () => {
    it('pages newest first with {messages, hasMore, cursor}; before (or cursor) continues', async () => {
      const own = await newRoom(api, admin, [alice]);
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push(await sendMessage(api, alice, own.id, `h${i}`));
      const { socket } = await open(alice);

      const first = await emitWithAck(socket, 'message:history', { roomId: own.id, limit: 2, requestId: 'h' });
      expect(first).toEqual({
        messages: [
          { id: sent[4]!.id, roomId: own.id, authorAgentId: alice.id, body: 'h4', createdAt: sent[4]!.createdAt, seq: 5, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null },
          { id: sent[3]!.id, roomId: own.id, authorAgentId: alice.id, body: 'h3', createdAt: sent[3]!.createdAt, seq: 4, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null },
        ],
        hasMore: true,
        cursor: sent[3]!.id,
        oldestSeq: 1,
      });
      const second = await emitWithAck(socket, 'message:history', { roomId: own.id, limit: 2, before: first.cursor });
      expect(second.messages.map((m: Payload) => m.body)).toEqual(['h2', 'h1']);
      const last = await emitWithAck(socket, 'message:history', { roomId: own.id, limit: 2, cursor: second.cursor });
      expect(last).toMatchObject({ hasMore: false, cursor: sent[0]!.id });
      expect(last.messages.map((m: Payload) => m.body)).toEqual(['h0']);

      const all = await emitWithAck(socket, 'message:history', { roomId: own.id });
      expect(all.messages).toHaveLength(5); // default limit 50
    });

    it('lets a non-member read history in open mode (membership enforcement is a future feature)', async () => {
      const { socket } = await open(carol);
      expect(await emitWithAck(socket, 'message:history', { roomId: room.id, limit: 1 })).toMatchObject({ hasMore: true });
    });

    it('answers an empty room with no messages and a null cursor', async () => {
      const empty = await newRoom(api, admin, [alice]);
      const { socket } = await open(alice);
      expect(await emitWithAck(socket, 'message:history', { roomId: empty.id })).toEqual({ messages: [], hasMore: false, cursor: null, oldestSeq: null });
    });

    it('refuses a bad limit or an unknown before in the acknowledgement', async () => {
      const { socket } = await open(alice);
      for (const limit of [0, 101, 2.5, 'ten']) {
        const ack = await emitWithAck(socket, 'message:history', { roomId: room.id, limit });
        expect(ack).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('limit') } });
      }
      expect(await emitWithAck(socket, 'message:history', { roomId: room.id, before: randomUUID() }))
        .toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('before') } });
      expect(await emitWithAck(socket, 'message:history', { roomId: randomUUID() }))
        .toEqual({ error: { code: 'ROOM_NOT_FOUND', message: expect.any(String) } });
    });
  });

  describe('errors', () => {
    // Each case: event, payload, expected code. Run with an acknowledgement and without one.
    const cases = (): [string, unknown, string][] => [
      ['message:send', { roomId: room.id, body: '' }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: room.id, body: 'x'.repeat(16_385) }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: room.id }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: room.id, body: 42 }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: room.id, body: 'nul \u0000' }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: 'not-a-uuid', body: 'x' }, 'VALIDATION_ERROR'],
      ['message:send', { body: 'x' }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: room.id, body: 'x', mentions: ['nope'] }, 'VALIDATION_ERROR'],
      ['message:send', { roomId: randomUUID(), body: 'x' }, 'ROOM_NOT_FOUND'],
      ['message:send', { roomId: room.id.toUpperCase(), body: 'x' }, 'FORBIDDEN'], // carol is not a member
      ['room:join', { roomId: randomUUID() }, 'ROOM_NOT_FOUND'],
      ['room:join', { roomId: room.id }, 'FORBIDDEN'],
      ['room:join', { roomId: 7 }, 'VALIDATION_ERROR'],
      ['room:leave', { roomId: 'x' }, 'VALIDATION_ERROR'],
      ['message:history', { roomId: 'x' }, 'VALIDATION_ERROR'],
      ['no:such-event', { roomId: room.id }, 'VALIDATION_ERROR'],
    ];

    it('puts the error into the acknowledgement as {error: {code, message}} when there is one', async () => {
      const { socket } = await open(carol);
      const errorEvents = record(socket, 'error');
      for (const [event, payload, code] of cases()) {
        const ack = await emitWithAck(socket, event, payload);
        expect(ack, `${event} ${JSON.stringify(payload).slice(0, 80)}`).toEqual({ error: { code, message: expect.any(String) } });
      }
      await roundTrip(socket);
      expect(errorEvents).toEqual([]);
    });

    it('emits an error event {code, message, requestId} when there is no acknowledgement', async () => {
      const { socket } = await open(carol);
      const errorEvents = record(socket, 'error');
      const all = cases();
      all.forEach(([event, payload], i) => socket.emit(event, { ...(payload as object), requestId: `req-${i}` }));
      await waitUntil('an error event for every bad payload', () => errorEvents.length === all.length);
      // Unknown events are refused before the queue, so compare by requestId rather than by order.
      const byId = (a: Payload, b: Payload) => Number(a.requestId.slice(4)) - Number(b.requestId.slice(4));
      expect([...errorEvents].sort(byId)).toEqual(all.map(([, , code], i) => ({ code, message: expect.any(String), requestId: `req-${i}` })));
    });

    it('names the failing field in a validation message', async () => {
      const { socket } = await open(alice);
      const ack = await emitWithAck(socket, 'message:send', { roomId: room.id, body: '' });
      expect(ack.error.message).toMatch(/body/);
      const reply = await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'x', replyTo: randomUUID() });
      expect(reply).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('replyTo') } });
    });

    it('refuses payloads that are not objects, and a requestId that is not a short string', async () => {
      const { socket } = await open(alice);
      for (const payload of [null, 'text', 42, true, [room.id]]) {
        const ack = await emitWithAck(socket, 'room:join', payload);
        expect(ack, JSON.stringify(payload)).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('payload') } });
      }
      // Without a payload at all (only the acknowledgement).
      expect(await emitWithAck(socket, 'message:send')).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.any(String) } });
      for (const requestId of [5, { a: 1 }, 'r'.repeat(129)]) {
        const ack = await emitWithAck(socket, 'room:list', { requestId });
        expect(ack).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('requestId') } });
      }
      const error = waitFor(socket, 'error');
      socket.emit('message:send', 'just a string');
      expect(await error).toEqual({ code: 'VALIDATION_ERROR', message: expect.any(String) });
      // The connection is still fine.
      expect(await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'still here' })).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    });

    it('survives hostile payloads: binary, deep nesting, extra arguments', async () => {
      const { socket } = await open(alice);
      let deep: unknown = {};
      for (let i = 0; i < 2000; i++) deep = { roomId: deep };
      const hostile: unknown[] = [Buffer.from('abc'), deep, { roomId: { $gt: '' }, body: ['x'] }, { __proto__: { roomId: room.id }, body: 'x' }];
      for (const payload of hostile) {
        const ack = await emitWithAck(socket, 'message:send', payload);
        expect(ack.error.code).toBe('VALIDATION_ERROR');
      }
      const ack = await socket.timeout(5000).emitWithAck('message:send', { roomId: room.id, body: 'extra args' }, 'ignored', 3);
      expect(ack).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    });
  });

  describe('room:join and room:leave', () => {
    it('room:join of a room the socket is in announces nothing; room:leave unsubscribes and announces offline; joining again announces online', async () => {
      const { socket: a } = await open(alice);
      const { socket: b } = await open(bob);
      // The sockets opened and closed around here come and go in the room's burst window, whose
      // updates reach bob's new socket at its end (docs/websocket.md): let it close first.
      await waitToProveAbsence(2 * PRESENCE_WINDOW_MS);
      const bobSees = record(b, 'presence:update');

      // Joining a room the socket is already in announces nothing (docs/protocol.md, Client to server).
      expect(await emitWithAck(a, 'room:join', { roomId: room.id, requestId: 'j1' })).toEqual({ ok: true });
      await roundTrip(b);
      expect(bobSees.filter((p) => p.agentId === alice.id)).toEqual([]);

      const leftAck = await emitWithAck(a, 'room:leave', { roomId: room.id });
      expect(leftAck).toEqual({ ok: true });
      await waitUntil('bob to see alice offline', () => bobSees.some((p) => p.agentId === alice.id && p.status === 'offline'));

      // Unsubscribed: bob's message no longer reaches alice.
      const aliceSees = record(a, 'message:new');
      await emitWithAck(b, 'message:send', { roomId: room.id, body: 'after leave' });
      await roundTrip(a);
      expect(aliceSees).toEqual([]);

      // Joining again subscribes again, and the agent is seen online again.
      expect(await emitWithAck(a, 'room:join', { roomId: room.id })).toEqual({ ok: true });
      await waitUntil('alice online again', () => bobSees.filter((p) => p.agentId === alice.id).at(-1)?.status === 'online');
      const back = waitFor(a, 'message:new', (m) => m.body === 'after rejoin');
      await emitWithAck(b, 'message:send', { roomId: room.id, body: 'after rejoin' });
      await back;
    });

    it('room:leave of a room the socket is not in is a quiet no-op', async () => {
      const { socket } = await open(carol);
      const errors = record(socket, 'error');
      socket.emit('room:leave', { roomId: randomUUID() });
      await roundTrip(socket);
      expect(errors).toEqual([]);
    });
  });

  describe('presence', () => {
    it('is seen by another member on connect and disconnect; two connections stay online until both go', async () => {
      const { socket: b } = await open(bob);
      const bobSees = record(b, 'presence:update');
      const aliceUpdates = () => bobSees.filter((p) => p.agentId === alice.id);

      const { socket: a1 } = await open(alice);
      await waitUntil('a first presence update for alice', () => aliceUpdates().length === 1);
      expect(aliceUpdates()).toEqual([{ agentId: alice.id, status: 'online' }]);

      // A second connection is not the first socket in the room: nothing new.
      const { socket: a2 } = await open(alice);
      await roundTrip(b);
      expect(aliceUpdates()).toHaveLength(1);

      // One of two goes: still online.
      a1.disconnect();
      await waitUntil('alice down to one connection', async () => (await connectionsOf(alice)) === 1);
      await roundTrip(b);
      expect(aliceUpdates()).toHaveLength(1);

      // The last one goes: offline.
      a2.disconnect();
      await waitUntil('a second presence update for alice', () => aliceUpdates().length === 2);
      expect(aliceUpdates()[1]).toEqual({ agentId: alice.id, status: 'offline' });
      expect(await server.app.ctx.presence.onlineAgents([alice.id, bob.id])).toEqual(new Set([bob.id]));
    });

    it('room:leave of one of two connections keeps the agent online in the room', async () => {
      const { socket: b } = await open(bob);
      const { socket: a1 } = await open(alice);
      await open(alice);
      await waitToProveAbsence(2 * PRESENCE_WINDOW_MS); // the connections' own updates, in their burst window
      const bobSees = record(b, 'presence:update');
      await emitWithAck(a1, 'room:leave', { roomId: room.id });
      await roundTrip(b);
      expect(bobSees).toEqual([]);
    });

    it('reports live connections to the directory reader and counts them in the gauge', async () => {
      const gauge = async () => (await server.app.ctx.metrics.agentsConnected.get()).values[0]?.value ?? 0;
      const before = await gauge();
      await open(carol);
      expect(await server.app.ctx.presence.onlineAgents([carol.id])).toEqual(new Set([carol.id]));
      expect(await gauge()).toBe(before + 1);
    });
  });

  describe('membership changes', () => {
    it('subscribes a live socket of an added member at once, and unsubscribes a removed one before the request answers', async () => {
      const shared = await newRoom(api, admin, [alice]);
      const { socket: a } = await open(alice);
      const { socket: c } = await open(carol);
      const aliceSees = record(a, 'presence:update');

      const added = await api.post(`/rooms/${shared.id}/members`, { agentId: carol.id });
      expect(added.status).toBe(201);
      await waitUntil('alice to see carol online', () => aliceSees.some((p) => p.agentId === carol.id && p.status === 'online'));

      const arrived = waitFor(c, 'message:new', (m) => m.roomId === shared.id);
      await emitWithAck(a, 'message:send', { roomId: shared.id, body: 'welcome carol' });
      expect((await arrived).body).toBe('welcome carol');
      expect((await emitWithAck(c, 'room:list')).rooms.map((r: Payload) => r.id)).toContain(shared.id);

      const removed = await api.delete(`/rooms/${shared.id}/members/${carol.id}`);
      expect(removed.status).toBe(204);
      const carolSees = record(c, 'message:new');
      await sendMessage(api, alice, shared.id, 'carol is gone');
      await emitWithAck(a, 'message:send', { roomId: shared.id, body: 'really gone' });
      await roundTrip(c);
      expect(carolSees).toEqual([]);
      await waitUntil('alice to see carol offline', () => aliceSees.some((p) => p.agentId === carol.id && p.status === 'offline'));
      // And she can no longer send there.
      expect(await emitWithAck(c, 'message:send', { roomId: shared.id, body: 'x' })).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String) } });
    });

    it('subscribes all sockets of a member of a newly created room', async () => {
      const { socket: c } = await open(carol);
      const fresh = await newRoom(api, admin, [carol]);
      const arrived = waitFor(c, 'message:new', (m) => m.roomId === fresh.id);
      await sendMessage(api, admin, fresh.id, 'new room');
      expect((await arrived).body).toBe('new room');
    });
  });

  describe('reconnect', () => {
    it('re-joins all rooms on a new connection with a fresh JWT', async () => {
      const extra = await newRoom(api, admin, [bob]);
      const { socket: first } = await open(bob);
      first.disconnect();
      await disconnected(first);

      const session = await api.post('/api/v1/sessions', { apiToken: bob.apiToken });
      expect(session.status).toBe(201);
      const { socket, hello } = await open({ ...bob, jwt: session.body.token });
      expect([...hello.rooms].sort()).toEqual([room.id, extra.id].sort());
      const both = Promise.all([
        waitFor(socket, 'message:new', (m) => m.roomId === room.id),
        waitFor(socket, 'message:new', (m) => m.roomId === extra.id),
      ]);
      await sendMessage(api, alice, room.id, 'to room');
      await sendMessage(api, admin, extra.id, 'to extra');
      await both;
    });
  });
});

describe('WebSocket history in strict mode (AUTHZ_MODE=strict)', () => {
  const { server } = useTestServer({ config: { authzMode: 'strict' } });

  it('needs membership to read history; open mode (above) lets any agent read it', async () => {
    const api = new Api(server.url);
    // The first admin, as `ams admin create` makes it: straight through the services.
    const bootstrap = { agentId: randomUUID(), role: 'admin' as const };
    const created = await server.app.ctx.agents.create(bootstrap, { name: `root-${Date.now().toString(36)}`, displayName: 'Root', role: 'admin' });
    const issued = await server.app.ctx.tokens.issue(bootstrap, created.id, { scopes: {} });
    const session = await api.post('/api/v1/sessions', { apiToken: issued.token });
    const admin: TestAgent = { id: created.id, name: created.name, role: 'admin', apiToken: issued.token, prefix: issued.prefix, jwt: session.body.token };
    const member = await newAgent(api, { asJwt: admin.jwt });
    const outsider = await newAgent(api, { asJwt: admin.jwt });
    const created2 = await api.post('/rooms', { slug: `strict-${Date.now().toString(36)}`, name: 'Strict', members: [member.id] }, { jwt: admin.jwt });
    expect(created2.status).toBe(201);
    const room = created2.body as TestRoom;

    const { socket: m } = await connectReady(server.url, member.jwt);
    const { socket: o } = await connectReady(server.url, outsider.jwt);
    expect(await emitWithAck(m, 'message:history', { roomId: room.id })).toEqual({ messages: [], hasMore: false, cursor: null, oldestSeq: null });
    expect(await emitWithAck(o, 'message:history', { roomId: room.id })).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String) } });
    m.disconnect();
    o.disconnect();
  });
});
