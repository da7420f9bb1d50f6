import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/config.js';
import { Api, bootstrapAdmin, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom, uniqueName } from '../helpers/api.js';
import { createTestDatabase, startServerProcess, startTestServer, TEST_JWT_SECRET, type TestDatabase } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, emitWithAck, record, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';
import { waitUntil } from '../helpers/wait.js';

// docs/catch-up.md: seq, forward catch-up (afterSeq, room:sync), read cursors. Runs on the
// suite's dialect (AMS_TEST_DATABASE=postgres for PostgreSQL).

const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('seq, catch-up and read cursors (open mode)', () => {
  // Four sockets send back to back; the per-connection limits are tested elsewhere.
  const t = useTestServer({ config: { ws: { ...testConfig().ws, eventsPerSecond: 10_000, abuseEventsPerSecond: 10_000 } } });
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let outsider: TestAgent;
  let sockets: ClientSocket[] = [];

  const open = async (agent: TestAgent) => {
    const ready = await connectReady(t.server.url, agent.jwt);
    sockets.push(ready.socket);
    return ready;
  };
  const send = (roomId: string, body: unknown, agent: TestAgent) => t.api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
  const sync = (roomId: string, query: string, agent: TestAgent = alice) => t.api.get(`/api/v1/rooms/${roomId}/messages${query}`, { jwt: agent.jwt });
  const markRead = (roomId: string, body: unknown, agent: TestAgent) => t.api.post(`/api/v1/rooms/${roomId}/read`, body, { jwt: agent.jwt });
  const listed = async (agent: TestAgent, roomId: string) =>
    ((await t.api.get('/api/v1/rooms', { jwt: agent.jwt })).body.rooms as Payload[]).find((r) => r.id === roomId);

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    [alice, bob, outsider] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
  });
  afterEach(() => {
    for (const s of sockets) s.disconnect();
    sockets = [];
  });

  describe('seq', () => {
    it('numbers concurrent sends from several sockets 1..N per room, gapless, each once, delivered in seq order', async () => {
      const room = await newRoom(t.api, admin, [alice, bob]);
      const other = await newRoom(t.api, admin, [alice, bob]);
      const senders = [await open(alice), await open(alice), await open(bob), await open(bob)];
      const { socket: listener } = await open(admin);
      const seen = record(listener, 'message:new');
      const PER_SOCKET = 20;
      const acks = await Promise.all(senders.flatMap(({ socket }, s) => range(1, PER_SOCKET).flatMap((i) => [
        emitWithAck(socket, 'message:send', { roomId: room.id, body: `s${s} m${i}` }).then((ack: Payload) => ({ roomId: room.id, ...ack })),
        emitWithAck(socket, 'message:send', { roomId: other.id, body: `s${s} o${i}` }).then((ack: Payload) => ({ roomId: other.id, ...ack })),
      ])));
      for (const target of [room, other]) {
        const seqs = acks.filter((a) => a.roomId === target.id).map((a) => a.seq as number).sort((a, b) => a - b);
        expect(seqs).toEqual(range(1, senders.length * PER_SOCKET));
      }
      await waitUntil('every message seen', () => seen.filter((m) => m.roomId === room.id).length === senders.length * PER_SOCKET, 5000);
      // Broadcast after commit, in commit order: a listener sees each room's seqs in order.
      expect(seen.filter((m) => m.roomId === room.id).map((m) => m.seq)).toEqual(range(1, senders.length * PER_SOCKET));
      // The stored numbers are the acknowledged ones.
      const stored = await sync(room.id, '?afterSeq=0&limit=100');
      expect(stored.body.messages.map((m: Payload) => [m.id, m.seq])).toEqual(
        acks.filter((a) => a.roomId === room.id).sort((a, b) => a.seq - b.seq).map((a) => [a.messageId, a.seq]),
      );
    });

    it('is on every message form, on rooms as lastSeq, and in agent:hello-ack as lastSeqs', async () => {
      const created = await t.api.post('/rooms', { slug: uniqueName('room'), name: 'Seq room', members: [alice.id, bob.id] }, { headers: { 'x-agent-id': admin.id } });
      expect(created.status).toBe(201);
      expect(created.body.lastSeq).toBe(0);
      const room = created.body as TestRoom;
      const empty = await newRoom(t.api, admin, [alice]);

      const { socket: b } = await open(bob);
      const arrived = waitFor(b, 'message:new', (m) => m.body === 'first');
      const rest = await send(room.id, { body: 'first' }, alice);
      expect(rest.status).toBe(201);
      expect(rest.body.seq).toBe(1);
      expect((await arrived).seq).toBe(1);
      const ack = await emitWithAck(b, 'message:send', { roomId: room.id, body: 'second', clientMsgId: 'k-1' });
      expect(ack).toEqual({ messageId: expect.any(String), seq: 2 });
      // A clientMsgId repeat returns the original's id and seq, on both transports.
      expect(await emitWithAck(b, 'message:send', { roomId: room.id, body: 'second', clientMsgId: 'k-1' })).toEqual(ack);
      const again = await send(room.id, { body: 'second', clientMsgId: 'k-1' }, bob);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: ack.messageId, seq: 2 });

      const history = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: alice.jwt });
      expect(history.body.messages.map((m: Payload) => m.seq)).toEqual([2, 1]);
      const wsHistory = await emitWithAck(b, 'message:history', { roomId: room.id });
      expect(wsHistory.messages.map((m: Payload) => m.seq)).toEqual([2, 1]);

      const plain = (await t.api.get('/rooms')).body as Payload[];
      expect(plain.find((r) => r.id === room.id).lastSeq).toBe(2);
      expect(plain.find((r) => r.id === empty.id).lastSeq).toBe(0);
      expect((await listed(alice, room.id)).lastSeq).toBe(2);
      const list = await emitWithAck(b, 'room:list');
      expect(list.rooms.find((r: Payload) => r.id === room.id)).toMatchObject({ lastSeq: 2 });

      const { hello } = await open(alice);
      expect(hello.lastSeqs).toEqual(Object.fromEntries(hello.rooms.map((id: string) => [id, id === room.id ? 2 : expect.any(Number)])));
      expect(hello.lastSeqs[empty.id]).toBe(0);
    });
  });

  describe('forward catch-up', () => {
    let room: TestRoom;
    const TOTAL = 12;
    beforeAll(async () => {
      room = await newRoom(t.api, admin, [alice, bob]);
      for (let i = 1; i <= TOTAL; i++) await sendMessage(t.api, i % 2 === 0 ? alice : bob, room.id, `m${i}`);
    });

    it('REST ?afterSeq=N: oldest first, {messages, lastSeq, hasMore}, pages forward exactly', async () => {
      const first = await sync(room.id, '?afterSeq=0&limit=5');
      expect(first.status).toBe(200);
      expect(Object.keys(first.body).sort()).toEqual(['hasMore', 'lastSeq', 'messages', 'oldestSeq']);
      expect(first.body.messages.map((m: Payload) => m.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(first.body.messages[0]).toEqual({ id: expect.any(String), roomId: room.id, senderId: bob.id, body: 'm1', createdAt: expect.any(String), seq: 1, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null,
        streaming: false, streamEnd: null, importance: 'normal', ack: null });
      expect(first.body).toMatchObject({ lastSeq: TOTAL, hasMore: true });
      const seen: number[] = [];
      let after = 0;
      for (;;) {
        const page = await sync(room.id, `?afterSeq=${after}&limit=5`);
        seen.push(...page.body.messages.map((m: Payload) => m.seq as number));
        if (!page.body.hasMore) break;
        after = page.body.messages[page.body.messages.length - 1].seq;
      }
      expect(seen).toEqual(range(1, TOTAL));
      expect((await sync(room.id, `?afterSeq=${TOTAL - 2}`)).body).toMatchObject({ lastSeq: TOTAL, hasMore: false });
    });

    it('afterSeq at or above lastSeq gives an empty page with the lastSeq; an empty room answers lastSeq 0', async () => {
      expect((await sync(room.id, `?afterSeq=${TOTAL}`)).body).toEqual({ messages: [], lastSeq: TOTAL, hasMore: false, oldestSeq: 1 });
      expect((await sync(room.id, '?afterSeq=1000')).body).toEqual({ messages: [], lastSeq: TOTAL, hasMore: false, oldestSeq: 1 });
      const empty = await newRoom(t.api, admin, [alice]);
      expect((await sync(empty.id, '?afterSeq=0')).body).toEqual({ messages: [], lastSeq: 0, hasMore: false, oldestSeq: null });
    });

    it('400 for afterSeq with cursor or before, for a bad afterSeq or limit; 404 unknown room; 401 without JWT', async () => {
      const newest = (await t.api.get(`/api/v1/rooms/${room.id}/messages?limit=1`, { jwt: alice.jwt })).body.messages[0].id as string;
      for (const query of [`?afterSeq=0&cursor=${newest}`, `?afterSeq=0&before=${newest}`]) {
        const res = await sync(room.id, query);
        expect(res.status, query).toBe(400);
        expect(res.body).toEqual({ error: expect.any(String), details: { afterSeq: expect.any(String) } });
      }
      for (const value of ['-1', '1.5', 'abc', '1e3', ' ']) {
        const res = await sync(room.id, `?afterSeq=${encodeURIComponent(value)}`);
        if (value === ' ') continue; // blank is "not given": plain history
        expect(res.status, value).toBe(400);
        expect(res.body.details).toEqual({ afterSeq: 'must be a whole number >= 0' });
      }
      expect((await sync(room.id, '?afterSeq=0&limit=0')).body.details).toEqual({ limit: 'must be a whole number from 1 to 100' });
      expect((await sync(room.id, '?afterSeq=0&limit=101')).status).toBe(400);
      expect((await sync(UNKNOWN_ID, '?afterSeq=0')).status).toBe(404);
      expect((await t.api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`)).status).toBe(401);
    });

    it('open mode: a non-member may catch up, as with history', async () => {
      const res = await sync(room.id, '?afterSeq=10', outsider);
      expect(res.status).toBe(200);
      expect(res.body.messages.map((m: Payload) => m.seq)).toEqual([11, 12]);
    });

    it('room:sync acknowledges {messages (WS items with seq, oldest first), lastSeq, hasMore}', async () => {
      const { socket } = await open(alice);
      const page = await emitWithAck(socket, 'room:sync', { roomId: room.id, afterSeq: 9, limit: 2, requestId: 's1' });
      expect(page).toEqual({
        messages: [
          { id: expect.any(String), roomId: room.id, authorAgentId: alice.id, body: 'm10', createdAt: expect.any(String), seq: 10, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null },
          { id: expect.any(String), roomId: room.id, authorAgentId: bob.id, body: 'm11', createdAt: expect.any(String), seq: 11, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null },
        ],
        lastSeq: TOTAL,
        hasMore: true,
        oldestSeq: 1,
      });
      expect(await emitWithAck(socket, 'room:sync', { roomId: room.id, afterSeq: 500 })).toEqual({ messages: [], lastSeq: TOTAL, hasMore: false, oldestSeq: 1 });
    });

    it('room:sync errors: VALIDATION_ERROR, ROOM_NOT_FOUND; the reply needs an acknowledgement', async () => {
      const { socket } = await open(alice);
      const invalid = [{ roomId: room.id }, { roomId: room.id, afterSeq: -1 }, { roomId: room.id, afterSeq: 'x' }, { roomId: room.id, afterSeq: 1.5 },
        { roomId: room.id, afterSeq: 0, before: UNKNOWN_ID }, { roomId: room.id, afterSeq: 0, limit: 0 }, { roomId: 'nope', afterSeq: 0 }];
      for (const payload of invalid) {
        expect(await emitWithAck(socket, 'room:sync', payload), JSON.stringify(payload)).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.any(String) } });
      }
      expect(await emitWithAck(socket, 'room:sync', { roomId: UNKNOWN_ID, afterSeq: 0 })).toEqual({ error: { code: 'ROOM_NOT_FOUND', message: expect.any(String) } });
      const error = waitFor(socket, 'error');
      socket.emit('room:sync', { roomId: room.id, afterSeq: 0, requestId: 'no-ack' });
      expect(await error).toEqual({ code: 'VALIDATION_ERROR', message: expect.any(String), requestId: 'no-ack' });
    });
  });

  describe('read cursors', () => {
    it('own messages are never unread; sending does not move the cursor; others\' messages count', async () => {
      const room = await newRoom(t.api, admin, [alice, bob]);
      await sendMessage(t.api, alice, room.id, 'mine 1');
      await sendMessage(t.api, alice, room.id, 'mine 2');
      expect(await listed(alice, room.id)).toMatchObject({ lastSeq: 2, readSeq: 0, unreadCount: 0 });
      expect(await listed(bob, room.id)).toMatchObject({ lastSeq: 2, readSeq: 0, unreadCount: 2 });
      await sendMessage(t.api, bob, room.id, 'theirs');
      expect(await listed(alice, room.id)).toMatchObject({ lastSeq: 3, readSeq: 0, unreadCount: 1 });
      expect(await listed(bob, room.id)).toMatchObject({ lastSeq: 3, readSeq: 0, unreadCount: 2 });
    });

    it('POST /api/v1/rooms/:id/read moves forward; a lower seq is a no-op; above lastSeq is 400', async () => {
      const room = await newRoom(t.api, admin, [alice, bob]);
      for (let i = 0; i < 4; i++) await sendMessage(t.api, bob, room.id, `b${i}`);
      const moved = await markRead(room.id, { seq: 3 }, alice);
      expect(moved.status).toBe(200);
      expect(moved.body).toEqual({ roomId: room.id, readSeq: 3, unreadCount: 1 });
      const lower = await markRead(room.id, { seq: 1 }, alice);
      expect(lower.status).toBe(200);
      expect(lower.body).toEqual({ roomId: room.id, readSeq: 3, unreadCount: 1 });
      const above = await markRead(room.id, { seq: 5 }, alice);
      expect(above.status).toBe(400);
      expect(above.body).toEqual({ error: expect.any(String), details: { seq: expect.stringContaining('lastSeq') } });
      expect((await markRead(room.id, { seq: 4 }, alice)).body).toEqual({ roomId: room.id, readSeq: 4, unreadCount: 0 });
      expect(await listed(alice, room.id)).toMatchObject({ lastSeq: 4, readSeq: 4, unreadCount: 0 });
      for (const body of [{}, { seq: -1 }, { seq: 1.5 }, { seq: '2' }, { seq: null }, []]) {
        const res = await markRead(room.id, body, alice);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.details, JSON.stringify(body)).toBeDefined();
      }
    });

    it('403 for a non-member (open mode too), 404 unknown room, 400 bad room id, 401 without JWT', async () => {
      const room = await newRoom(t.api, admin, [alice]);
      const forbidden = await markRead(room.id, { seq: 0 }, outsider);
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: expect.any(String) });
      expect((await markRead(UNKNOWN_ID, { seq: 0 }, alice)).status).toBe(404);
      expect((await markRead('nope', { seq: 0 }, alice)).body.details).toEqual({ roomId: 'must be a UUID' });
      expect((await t.api.post(`/api/v1/rooms/${room.id}/read`, { seq: 0 })).status).toBe(401);
    });

    it('a new member starts at the room\'s lastSeq; listings carry readSeq/unreadCount only for member rooms', async () => {
      const room = await newRoom(t.api, admin, [alice]);
      for (let i = 0; i < 3; i++) await sendMessage(t.api, alice, room.id, `before ${i}`);
      expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: bob.id })).status).toBe(201);
      expect(await listed(bob, room.id)).toMatchObject({ lastSeq: 3, readSeq: 3, unreadCount: 0 });
      await sendMessage(t.api, alice, room.id, 'after');
      expect(await listed(bob, room.id)).toMatchObject({ lastSeq: 4, readSeq: 3, unreadCount: 1 });
      const notMine = await listed(outsider, room.id);
      expect(notMine).toEqual({ id: room.id, slug: room.slug, name: room.name, kind: 'group', createdBy: admin.id, createdAt: expect.any(String), lastSeq: 4, retentionDays: null, legalHold: false });
      // Without a JWT (open mode) rooms are listed without read state.
      const anonymous = ((await t.api.get('/api/v1/rooms')).body.rooms as Payload[]).find((r) => r.id === room.id);
      expect(anonymous).not.toHaveProperty('readSeq');
      const { socket } = await open(bob);
      const list = await emitWithAck(socket, 'room:list');
      expect(list.rooms.find((r: Payload) => r.id === room.id)).toEqual({ id: room.id, slug: room.slug, name: room.name, kind: 'group', lastSeq: 4, readSeq: 3, unreadCount: 1, attentionCount: 0 });
    });

    it('room:read acknowledges {roomId, readSeq, unreadCount}; errors as VALIDATION_ERROR, FORBIDDEN, ROOM_NOT_FOUND', async () => {
      const room = await newRoom(t.api, admin, [alice, bob]);
      await sendMessage(t.api, bob, room.id, 'one');
      await sendMessage(t.api, bob, room.id, 'two');
      const { socket } = await open(alice);
      expect(await emitWithAck(socket, 'room:read', { roomId: room.id, seq: 1, requestId: 'r' })).toEqual({ roomId: room.id, readSeq: 1, unreadCount: 1 });
      expect(await emitWithAck(socket, 'room:read', { roomId: room.id, seq: 0 })).toEqual({ roomId: room.id, readSeq: 1, unreadCount: 1 });
      for (const payload of [{ roomId: room.id, seq: 3 }, { roomId: room.id }, { roomId: room.id, seq: -2 }, { roomId: 'x', seq: 0 }]) {
        expect(await emitWithAck(socket, 'room:read', payload), JSON.stringify(payload)).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.any(String) } });
      }
      expect(await emitWithAck(socket, 'room:read', { roomId: UNKNOWN_ID, seq: 0 })).toEqual({ error: { code: 'ROOM_NOT_FOUND', message: expect.any(String) } });
      const { socket: other } = await open(outsider);
      expect(await emitWithAck(other, 'room:read', { roomId: room.id, seq: 0 })).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String) } });
    });
  });
});

describe('strict mode: catch-up and read cursors need membership', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });
  let admin: TestAgent;
  let member: TestAgent;
  let outsider: TestAgent;
  let room: { id: string };

  beforeAll(async () => {
    // The first admin comes from outside the API, as `ams admin create` makes it.
    admin = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    member = await newAgent(t.api, { asJwt: admin.jwt });
    outsider = await newAgent(t.api, { asJwt: admin.jwt });
    room = (await t.api.post('/rooms', { slug: uniqueName('room'), name: 'R', members: [member.id] }, { jwt: admin.jwt })).body;
    await sendMessage(t.api, member, room.id, 'strict');
  });

  it('afterSeq and room:sync: 403 / FORBIDDEN for a non-member; a member catches up', async () => {
    expect((await t.api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: outsider.jwt })).status).toBe(403);
    const ok = await t.api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: member.jwt });
    expect(ok.body).toMatchObject({ lastSeq: 1, hasMore: false });
    const { socket } = await connectReady(t.server.url, outsider.jwt);
    try {
      expect(await emitWithAck(socket, 'room:sync', { roomId: room.id, afterSeq: 0 })).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String) } });
    } finally {
      socket.disconnect();
    }
  });

  it('read cursors: a member moves its cursor, a non-member gets 403; GET /api/v1/rooms shows the member its read state', async () => {
    expect((await t.api.post(`/api/v1/rooms/${room.id}/read`, { seq: 1 }, { jwt: member.jwt })).body).toEqual({ roomId: room.id, readSeq: 1, unreadCount: 0 });
    expect((await t.api.post(`/api/v1/rooms/${room.id}/read`, { seq: 1 }, { jwt: outsider.jwt })).status).toBe(403);
    const rooms = (await t.api.get('/api/v1/rooms', { jwt: member.jwt })).body.rooms as Payload[];
    expect(rooms).toEqual([expect.objectContaining({ id: room.id, lastSeq: 1, readSeq: 1, unreadCount: 0 })]);
  });
});

/** A server the catch-up test can stop and start again on the same database. */
interface CatchUpNode {
  url: string;
  stop(): Promise<void>;
}

const RESTARTS: Record<string, (db: TestDatabase) => Promise<CatchUpNode>> = {
  // In this process, closed gracefully.
  'a graceful restart': async (db) => {
    const server = await startTestServer({ db });
    return { url: server.url, stop: () => server.close({ keepDatabase: true }) };
  },
  // `node dist/main.js`, killed with SIGKILL: no shutdown runs, whatever was acknowledged is committed.
  'a SIGKILLed node': async (db) => {
    const node = await startServerProcess({
      DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_ANON_PER_MINUTE: '100000', RATE_LIMIT_AGENT_PER_MINUTE: '100000',
    });
    return { url: node.url, stop: async () => void (await node.kill('SIGKILL')) };
  },
};

describe.each(Object.entries(RESTARTS))('exact catch-up across %s', (_how, start) => {
  it('a client that remembers its last seq per room misses nothing and sees nothing twice', { timeout: 90_000 }, async () => {
    const db = await createTestDatabase();
    let server = await start(db);
    try {
      let api = new Api(server.url);
      const admin = await newAdmin(api);
      const reader = await newAgent(api);
      const writer = await newAgent(api);
      const rooms = [await newRoom(api, admin, [reader, writer]), await newRoom(api, admin, [reader, writer])];
      const sent = new Map<string, string[]>(rooms.map((r) => [r.id, []]));
      const sendSome = async (n: number, tag: string): Promise<void> => {
        for (let i = 0; i < n; i++) {
          for (const room of rooms) sent.get(room.id)!.push((await sendMessage(api, writer, room.id, `${tag} ${i}`)).id);
        }
      };

      // The client of docs/catch-up.md: last processed seq per room; live messages in order,
      // duplicates ignored, a gap filled with room:sync.
      const processed = new Map<string, string[]>(rooms.map((r) => [r.id, []]));
      const lastSeq = new Map<string, number>(rooms.map((r) => [r.id, 0]));
      let socket: ClientSocket | undefined;
      let chain = Promise.resolve();
      const accept = (m: Payload): void => {
        const last = lastSeq.get(m.roomId) ?? 0;
        if (m.seq <= last) return;
        expect(m.seq).toBe(last + 1);
        processed.get(m.roomId)!.push(m.id);
        lastSeq.set(m.roomId, m.seq);
      };
      const catchUp = async (s: ClientSocket, roomId: string): Promise<void> => {
        for (;;) {
          const page = await emitWithAck(s, 'room:sync', { roomId, afterSeq: lastSeq.get(roomId), limit: 3 });
          for (const m of page.messages) accept(m);
          if (!page.hasMore) return;
        }
      };
      const connectClient = async (url: string): Promise<void> => {
        const ready = await connectReady(url, reader.jwt);
        socket = ready.socket;
        const s = ready.socket;
        s.on('message:new', (m: Payload) => {
          chain = chain.then(async () => {
            if (m.seq > (lastSeq.get(m.roomId) ?? 0) + 1) await catchUp(s, m.roomId);
            accept(m);
          });
        });
        for (const roomId of ready.hello.rooms) {
          if ((ready.hello.lastSeqs[roomId] ?? 0) > (lastSeq.get(roomId) ?? 0)) chain = chain.then(() => catchUp(s, roomId));
        }
        await chain;
      };

      await connectClient(server.url);
      await sendSome(3, 'live');
      await waitUntil('three processed per room', () => rooms.every((r) => processed.get(r.id)!.length === 3), 5000);
      socket!.disconnect();
      await sendSome(4, 'while away');

      await server.stop();
      server = await start(db);
      api = new Api(server.url);
      await sendSome(2, 'after restart');
      // Reconnect while more messages are being sent.
      const more = sendSome(5, 'during reconnect');
      await connectClient(server.url);
      await more;
      await waitUntil('every sent message processed', () => rooms.every((r) => processed.get(r.id)!.length === sent.get(r.id)!.length), 5000);
      await chain;
      for (const room of rooms) {
        expect(processed.get(room.id)).toEqual(sent.get(room.id));
        expect(lastSeq.get(room.id)).toBe(sent.get(room.id)!.length);
      }
      socket!.disconnect();
    } finally {
      await server.stop();
      await db.drop();
    }
  });
});
