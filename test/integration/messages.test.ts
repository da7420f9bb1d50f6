import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

interface Page {
  messages: { id: string; roomId: string; senderId: string; body: string; createdAt: string }[];
  nextCursor: string | null;
  hasMore: boolean;
}

describe('messages over REST', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let member: TestAgent;
  let outsider: TestAgent;
  let room: TestRoom;
  beforeAll(async () => {
    admin = await newAdmin(api);
    [member, outsider] = await Promise.all([newAgent(api), newAgent(api)]);
    room = await newRoom(api, admin, [member]);
  });

  const send = (roomId: string, body: unknown, jwt = member.jwt) => api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt });
  const history = (roomId: string, query = '', jwt = member.jwt) => api.get(`/api/v1/rooms/${roomId}/messages${query}`, { jwt });

  describe('POST /api/v1/rooms/:id/messages', () => {
    it('stores a message: 201 with the Message object', async () => {
      const res = await send(room.id, { body: 'hello, room' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: expect.any(String), roomId: room.id, senderId: member.id, body: 'hello, room', createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/), seq: 1, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null });
      const page = await history(room.id);
      expect(page.body.messages[0]).toEqual(res.body);
    });

    it('401 without a valid JWT', async () => {
      for (const jwt of [undefined, 'nope', member.apiToken]) {
        const res = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'x' }, jwt === undefined ? {} : { jwt });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: expect.any(String) });
      }
    });

    it('403 for an agent that is not a member, 404 for an unknown room, 400 for a bad room id', async () => {
      const forbidden = await send(room.id, { body: 'let me in' }, outsider.jwt);
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: expect.any(String) });
      const missing = await send(UNKNOWN_ID, { body: 'anyone?' });
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ error: 'Room not found' });
      const bad = await send('lobby', { body: 'x' });
      expect(bad.status).toBe(400);
      expect(bad.body.details).toEqual({ roomId: 'must be a UUID' });
      const page = await history(room.id);
      expect(page.body.messages.map((m: { body: string }) => m.body)).not.toContain('let me in');
    });

    it('accepts bodies of 1 and 16384 code points (16384 emoji too) and rejects 0 and 16385', async () => {
      for (const body of ['x', 'x'.repeat(16384), '🙂'.repeat(16384)]) {
        const res = await send(room.id, { body });
        expect(res.status, `${body.length} units`).toBe(201);
        expect(res.body.body).toBe(body);
      }
      for (const body of ['', 'x'.repeat(16385), '🙂'.repeat(16385)]) {
        const res = await send(room.id, { body });
        expect(res.status, `${body.length} units`).toBe(400);
        expect(Object.keys(res.body.details)).toEqual(['body']);
      }
      const empty = await send(room.id, { body: '' });
      expect(empty.body.details.body).toBe('must not be empty');
      const long = await send(room.id, { body: 'x'.repeat(16385) });
      expect(long.body.details.body).toBe('must be at most 16384 characters');
    });

    it('rejects a missing or non-string body, NUL, unpaired surrogates and non-object payloads', async () => {
      expect((await send(room.id, {})).body.details).toEqual({ body: 'is required' });
      expect((await send(room.id, { body: 5 })).body.details).toEqual({ body: 'must be a string' });
      const nul = await api.request('POST', `/api/v1/rooms/${room.id}/messages`, { jwt: member.jwt, rawBody: '{"body":"a\\u0000"}' });
      expect(nul.status).toBe(400);
      expect(nul.body.details).toEqual({ body: 'must not contain NUL characters' });
      const lone = await api.request('POST', `/api/v1/rooms/${room.id}/messages`, { jwt: member.jwt, rawBody: '{"body":"\\udc00 low"}' });
      expect(lone.status).toBe(400);
      expect(lone.body.details).toEqual({ body: 'must be valid Unicode (no unpaired surrogates)' });
      const array = await api.request('POST', `/api/v1/rooms/${room.id}/messages`, { jwt: member.jwt, rawBody: '["hi"]' });
      expect(array.status).toBe(400);
    });

    it('validates, stores and returns mentions and replyTo', async () => {
      const first = await send(room.id, { body: 'first' });
      const reply = await send(room.id, { body: 'second', mentions: [admin.id, admin.id.toUpperCase()], replyTo: first.body.id });
      expect(reply.status).toBe(201);
      expect(reply.body).toMatchObject({ mentions: [admin.id], replyTo: first.body.id });
      const page = await history(room.id, '?limit=1');
      expect(page.body.messages[0]).toEqual(reply.body);
      expect((await send(room.id, { body: 'x', mentions: ['bob'] })).status).toBe(400);
      expect((await send(room.id, { body: 'x', mentions: 'bob' })).status).toBe(400);
      const unknownReply = await send(room.id, { body: 'x', replyTo: UNKNOWN_ID });
      expect(unknownReply.status).toBe(400);
      expect(Object.keys(unknownReply.body.details)).toEqual(['replyTo']);
      const other = await newRoom(api, admin, [member]);
      const crossRoom = await send(other.id, { body: 'x', replyTo: first.body.id });
      expect(crossRoom.status).toBe(400);
    });

    it('writes a message-sent audit record and counts service_messages_total by room', async () => {
      const res = await send(room.id, { body: 'audited' });
      const records = await listAudit(server.app.ctx.database.db, 'message-sent', 1000);
      expect(records.find((r) => r.subjectId === res.body.id)).toMatchObject({ actorId: member.id, detail: { roomId: room.id } });
      const metrics = await api.get('/metrics');
      const line = (metrics.body as string).split('\n').find((l) => l.startsWith(`service_messages_total{room="${room.id}"}`));
      expect(line).toBeDefined();
      expect(Number(line!.split(' ')[1])).toBeGreaterThan(0);
    });

    it('a clientMsgId repeat returns the original message (200) instead of storing twice', async () => {
      const first = await send(room.id, { body: 'once', clientMsgId: 'c-1' });
      expect(first.status).toBe(201);
      const again = await send(room.id, { body: 'once', clientMsgId: 'c-1' });
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(first.body.id);
      const conflicting = await send(room.id, { body: 'different', clientMsgId: 'c-1' });
      expect(conflicting.status).toBe(409);
    });
  });

  describe('GET /api/v1/rooms/:id/messages', () => {
    let big: TestRoom;
    let sentIds: string[]; // oldest first
    const TOTAL = 250;

    beforeAll(async () => {
      big = await newRoom(api, admin, [member]);
      sentIds = [];
      // Sequential sends: each id is strictly newer than the previous one.
      for (let i = 0; i < TOTAL; i++) sentIds.push((await sendMessage(api, i % 2 === 0 ? member : admin, big.id, `message ${i}`)).id);
    });

    async function walk(param: 'cursor' | 'before', limit: number | undefined): Promise<{ ids: string[]; pages: Page[] }> {
      const ids: string[] = [];
      const pages: Page[] = [];
      let cursor: string | null = null;
      for (;;) {
        const query = new URLSearchParams();
        if (limit !== undefined) query.set('limit', String(limit));
        if (cursor !== null) query.set(param, cursor);
        const res = await history(big.id, `?${query.toString()}`);
        expect(res.status).toBe(200);
        const page = res.body as Page;
        pages.push(page);
        ids.push(...page.messages.map((m) => m.id));
        if (!page.hasMore) break;
        expect(page.nextCursor).toBe(page.messages[page.messages.length - 1]!.id);
        cursor = page.nextCursor;
        expect(pages.length).toBeLessThan(TOTAL + 2);
      }
      return { ids, pages };
    }

    it.each([
      ['cursor', 50],
      ['cursor', 7],
      ['before', 50],
      ['before', 7],
      ['cursor', undefined],
      ['before', 100],
    ] as const)('visits each of %s-paged messages exactly once, newest first (limit %s)', async (param, limit) => {
      const { ids, pages } = await walk(param, limit);
      expect(ids).toEqual([...sentIds].reverse());
      const size = limit ?? 50;
      expect(pages).toHaveLength(Math.ceil(TOTAL / size));
      for (const page of pages.slice(0, -1)) {
        expect(page.messages).toHaveLength(size);
        expect(page.hasMore).toBe(true);
      }
      const last = pages[pages.length - 1]!;
      expect(last.hasMore).toBe(false);
      expect(last.nextCursor).toBe(sentIds[0]);
    });

    it('returns REST items {id, roomId, senderId, body, createdAt, seq, threadId, replyCount, lastReplyAt, editedAt, deletedAt}, newest first', async () => {
      const res = await history(big.id, '?limit=2');
      expect(res.body.messages).toEqual([
        { id: sentIds[TOTAL - 1], roomId: big.id, senderId: admin.id, body: `message ${TOTAL - 1}`, createdAt: expect.any(String), seq: TOTAL, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null },
        { id: sentIds[TOTAL - 2], roomId: big.id, senderId: member.id, body: `message ${TOTAL - 2}`, createdAt: expect.any(String), seq: TOTAL - 1, threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null },
      ]);
      expect(res.body.nextCursor).toBe(sentIds[TOTAL - 2]);
      expect(res.body.hasMore).toBe(true);
    });

    it('a cursor on the oldest message gives an empty page with nextCursor null', async () => {
      const res = await history(big.id, `?cursor=${sentIds[0]}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ messages: [], nextCursor: null, hasMore: false, oldestSeq: 1 });
    });

    it('an empty room gives an empty page', async () => {
      const empty = await newRoom(api, admin, [member]);
      expect((await history(empty.id)).body).toEqual({ messages: [], nextCursor: null, hasMore: false, oldestSeq: null });
    });

    it('an exact last page has hasMore false', async () => {
      const res = await history(big.id, `?limit=10&before=${sentIds[10]}`);
      expect(res.body.messages.map((m: { id: string }) => m.id)).toEqual(sentIds.slice(0, 10).reverse());
      expect(res.body.hasMore).toBe(false);
      expect(res.body.nextCursor).toBe(sentIds[0]);
    });

    it('cursor and before may both be given when equal; differing is 400', async () => {
      const same = await history(big.id, `?limit=3&cursor=${sentIds[100]}&before=${sentIds[100]!.toUpperCase()}`);
      expect(same.status).toBe(200);
      expect(same.body.messages.map((m: { id: string }) => m.id)).toEqual([sentIds[99], sentIds[98], sentIds[97]]);
      const differ = await history(big.id, `?cursor=${sentIds[100]}&before=${sentIds[101]}`);
      expect(differ.status).toBe(400);
    });

    it.each(['0', '101', 'abc', '-1', '1.5', '1e2', ' '])('limit=%j is 400 with details.limit', async (limit) => {
      const res = await history(big.id, `?limit=${encodeURIComponent(limit)}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), details: { limit: 'must be a whole number from 1 to 100' } });
    });

    it('limit 1 and 100 are accepted', async () => {
      expect((await history(big.id, '?limit=1')).body.messages).toHaveLength(1);
      expect((await history(big.id, '?limit=100')).body.messages).toHaveLength(100);
    });

    it('an unknown cursor, a message of another room, or a non-UUID cursor is 400', async () => {
      const unknown = await history(big.id, `?cursor=${UNKNOWN_ID}`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.details).toEqual({ cursor: 'is not the id of a message in this room' });
      const elsewhere = await history(room.id, `?before=${sentIds[5]}`);
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.details).toEqual({ before: 'is not the id of a message in this room' });
      const malformed = await history(big.id, '?cursor=yesterday');
      expect(malformed.status).toBe(400);
      expect(malformed.body.details).toEqual({ cursor: 'must be a UUID' });
    });

    it('401 without a JWT, 404 for an unknown room, 400 for a bad room id', async () => {
      expect((await api.get(`/api/v1/rooms/${big.id}/messages`)).status).toBe(401);
      const missing = await history(UNKNOWN_ID);
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ error: 'Room not found' });
      const bad = await history('nope');
      expect(bad.status).toBe(400);
      expect(bad.body.details).toEqual({ roomId: 'must be a UUID' });
    });

    it('open mode: a non-member with a JWT may read the history (membership is future enforcement)', async () => {
      const res = await history(big.id, '?limit=1', outsider.jwt);
      expect(res.status).toBe(200);
      expect(res.body.messages[0].id).toBe(sentIds[TOTAL - 1]);
    });
  });
});
