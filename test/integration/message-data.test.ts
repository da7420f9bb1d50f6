import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type { DB } from '../../src/store/schema.js';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady, emitWithAck, waitFor } from '../helpers/ws.js';

// docs/protocol.md, Messages: `data` and `attachments` on every send and every representation, on
// the suite's engine (AMS_TEST_DATABASE).

/** An object nested `depth` levels deep ({} is 1). */
const nested = (depth: number, viaArrays = false): Record<string, unknown> => {
  let inner: unknown = {};
  for (let d = 1; d < depth; d++) inner = viaArrays ? [inner] : { a: inner };
  return viaArrays && depth > 1 ? { a: (inner as unknown[])[0] } : (inner as Record<string, unknown>);
};

/** A file row as an upload leaves it (completed unless said otherwise). */
async function seedFile(db: Kysely<DB>, uploader: TestAgent, options: { name?: string; complete?: boolean } = {}) {
  const id = randomUUID();
  const now = new Date().toISOString();
  const file = { id, name: options.name ?? `report-${id.slice(0, 8)}.txt`, contentType: 'text/plain', size: 5, sha256: 'ab'.repeat(32) };
  await db.insertInto('files').values({
    id, name: file.name, content_type: file.contentType, size: file.size, sha256: options.complete === false ? null : file.sha256,
    uploader_id: uploader.id, created_at: now, completed_at: options.complete === false ? null : now,
  }).execute();
  return file;
}

describe('message data and attachments', () => {
  let receiver: WebhookReceiver;
  const { server, api } = useTestServer(async () => {
    receiver = await startWebhookReceiver();
    return { config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } };
  });
  afterAll(() => receiver.close());
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  const db = (): Kysely<DB> => server.app.ctx.database.db;
  const send = (body: Record<string, unknown>, jwt = alice.jwt, roomId = room.id) => api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt });

  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    room = await newRoom(api, admin, [alice, bob]);
  });

  describe('data', () => {
    it('is stored and returned; null and absent mean none', async () => {
      const data = { verdict: 'pass', score: 0.93, tags: ['a', 'b'], nested: { ok: true, none: null }, text: 'ünïcødé ✓' };
      const sent = await send({ body: 'with data', data });
      expect(sent.status).toBe(201);
      expect(sent.body.data).toEqual(data);
      expect(sent.body.attachments).toEqual([]);
      for (const body of [{ body: 'null data', data: null }, { body: 'no data' }]) {
        const res = await send(body);
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject({ data: null, attachments: [] });
      }
      const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
      expect(history.body.messages.find((m: { id: string }) => m.id === sent.body.id).data).toEqual(data);
    });

    it('at most 32,768 bytes as compact UTF-8 JSON', async () => {
      // {"x":"…"}: 8 bytes besides the string.
      expect((await send({ body: 'at the limit', data: { x: 'a'.repeat(32_760) } })).status).toBe(201);
      expect((await send({ body: 'two-byte characters at the limit', data: { x: 'é'.repeat(16_380) } })).status).toBe(201);
      for (const data of [{ x: 'a'.repeat(32_761) }, { x: 'é'.repeat(16_381) }]) {
        const res = await send({ body: 'over', data });
        expect(res.status).toBe(400);
        expect(res.body.details.data).toMatch(/32768 bytes/);
      }
    });

    it('at most 16 levels deep, objects and arrays alike', async () => {
      for (const viaArrays of [false, true]) {
        const ok = await send({ body: 'deep', data: nested(16, viaArrays) });
        expect(ok.status).toBe(201);
        expect(ok.body.data).toEqual(nested(16, viaArrays));
        const over = await send({ body: 'too deep', data: nested(17, viaArrays) });
        expect(over.status).toBe(400);
        expect(over.body.details.data).toMatch(/16 levels/);
      }
    });

    it('must be an object: arrays, strings, numbers and booleans are refused', async () => {
      for (const data of [[1, 2], 'text', 42, true]) {
        const res = await send({ body: 'not an object', data });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ details: { data: expect.stringContaining('object') } });
      }
    });

    it('is not searched', async () => {
      const word = `zebra${Date.now().toString(36)}`;
      const sent = await send({ body: `searchable ${word}`, data: { hidden: `other${word}` } });
      await send({ body: 'only in data', data: { word: `other${word}` } });
      const found = await api.get(`/api/v1/search/messages?q=${word}`, { jwt: bob.jwt });
      expect(found.body.results.map((m: { id: string }) => m.id)).toEqual([sent.body.id]);
      expect(found.body.results[0]).toMatchObject({ data: { hidden: `other${word}` }, attachments: [] });
      const none = await api.get(`/api/v1/search/messages?q=other${word}`, { jwt: bob.jwt });
      expect(none.body.results).toEqual([]);
    });

    it('a clientMsgId repeat with the same data is the original; with other data a conflict', async () => {
      const clientMsgId = randomUUID();
      const first = await send({ body: 'once', clientMsgId, data: { a: 1, b: { c: 2, d: 3 } } });
      expect(first.status).toBe(201);
      const again = await send({ body: 'once', clientMsgId, data: { b: { d: 3, c: 2 }, a: 1 } });
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(first.body.id);
      expect((await send({ body: 'once', clientMsgId, data: { a: 2 } })).status).toBe(409);
    });
  });

  describe('attachments', () => {
    it('carry completed files the sender uploaded, in order, on every representation; one file on several messages', async () => {
      const [one, two] = [await seedFile(db(), alice, { name: 'one.txt' }), await seedFile(db(), alice, { name: 'two.txt' })];
      const expected = [
        { id: one.id, name: 'one.txt', contentType: 'text/plain', size: 5, sha256: one.sha256 },
        { id: two.id, name: 'two.txt', contentType: 'text/plain', size: 5, sha256: two.sha256 },
      ];
      const sent = await send({ body: 'two files', attachments: [two.id, one.id.toUpperCase()] });
      expect(sent.status).toBe(201);
      expect(sent.body.attachments).toEqual([expected[1], expected[0]]);
      const again = await send({ body: 'the same file again', attachments: [one.id] });
      expect(again.body.attachments).toEqual([expected[0]]);

      const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
      const byId = new Map(history.body.messages.map((m: { id: string }) => [m.id, m]));
      expect(byId.get(sent.body.id)).toMatchObject({ attachments: [expected[1], expected[0]] });
      expect(byId.get(again.body.id)).toMatchObject({ attachments: [expected[0]] });
      const sync = await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=${sent.body.seq - 1}&limit=1`, { jwt: bob.jwt });
      expect(sync.body.messages[0]).toMatchObject({ id: sent.body.id, attachments: [expected[1], expected[0]] });
      const inbox = await api.get('/api/v1/inbox?limit=100', { jwt: bob.jwt });
      expect(inbox.body.messages.find((m: { id: string }) => m.id === sent.body.id)).toMatchObject({ attachments: [expected[1], expected[0]] });
    });

    it('refuses more than 10, repeats, non-ids, unknown files, other agents\' files and incomplete uploads', async () => {
      const mine = await Promise.all(Array.from({ length: 11 }, () => seedFile(db(), alice)));
      const bobs = await seedFile(db(), bob);
      const incomplete = await seedFile(db(), alice, { complete: false });
      expect((await send({ body: 'ten', attachments: mine.slice(0, 10).map((f) => f.id) })).status).toBe(201);
      for (const attachments of [
        mine.map((f) => f.id), [mine[0]!.id, mine[0]!.id], ['not-a-uuid'], 'x', [randomUUID()], [bobs.id], [mine[1]!.id, bobs.id], [incomplete.id],
      ]) {
        const res = await send({ body: 'bad attachments', attachments });
        expect(res.status, JSON.stringify(attachments)).toBe(400);
        expect(res.body).toMatchObject({ details: { attachments: expect.any(String) } });
      }
      // Nothing of a refused send was stored.
      const count = await db().selectFrom('message_attachments').select((eb) => eb.fn.countAll<number | string>().as('n')).where('file_id', '=', bobs.id).executeTakeFirstOrThrow();
      expect(Number(count.n)).toBe(0);
    });

    it('a thread, an edit (message:updated) and a deletion (data and files gone) carry them', async () => {
      const file = await seedFile(db(), alice);
      const root = await send({ body: 'root', data: { k: 'root' }, attachments: [file.id] });
      const reply = await send({ body: 'reply', replyTo: root.body.id, data: { k: 'reply' } }, bob.jwt);
      const thread = await api.get(`/api/v1/rooms/${room.id}/messages/${reply.body.id}/thread`, { jwt: bob.jwt });
      expect(thread.body.root).toMatchObject({ data: { k: 'root' }, attachments: [{ id: file.id }] });
      expect(thread.body.replies[0]).toMatchObject({ data: { k: 'reply' }, attachments: [] });

      const { socket } = await connectReady(server.url, bob.jwt);
      try {
        const updated = waitFor(socket, 'message:updated', (m: { id: string }) => m.id === root.body.id);
        const edited = await api.request('PATCH', `/api/v1/rooms/${room.id}/messages/${root.body.id}`, { body: { body: 'root, edited' }, jwt: alice.jwt });
        expect(edited.body).toMatchObject({ data: { k: 'root' }, attachments: [{ id: file.id }] });
        expect(await updated).toMatchObject({ body: 'root, edited', data: { k: 'root' }, attachments: [{ id: file.id, name: file.name }] });
      } finally {
        socket.close();
      }
      expect((await api.delete(`/api/v1/rooms/${room.id}/messages/${root.body.id}`, { jwt: alice.jwt })).status).toBe(204);
      const after = await api.get(`/api/v1/rooms/${room.id}/messages/${root.body.id}/thread`, { jwt: bob.jwt });
      expect(after.body.root).toMatchObject({ body: '', data: null, attachments: [] });
    });
  });

  describe('over WebSocket', () => {
    it('message:send takes data and attachments; message:new and room:sync carry them; bad data is a VALIDATION_ERROR', async () => {
      const file = await seedFile(db(), alice);
      const { socket } = await connectReady(server.url, alice.jwt);
      try {
        const seen = waitFor(socket, 'message:new', (m: { body: string }) => m.body === 'ws data');
        const ack = await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'ws data', data: { via: 'ws' }, attachments: [file.id] });
        expect(ack).toMatchObject({ messageId: expect.any(String) });
        const wire = { data: { via: 'ws' }, attachments: [{ id: file.id, name: file.name, contentType: 'text/plain', size: 5, sha256: file.sha256 }] };
        expect(await seen).toMatchObject({ id: ack.messageId, ...wire });
        const page = await emitWithAck(socket, 'room:sync', { roomId: room.id, afterSeq: ack.seq - 1, limit: 1 });
        expect(page.messages[0]).toMatchObject({ id: ack.messageId, authorAgentId: alice.id, ...wire });
        const history = await emitWithAck(socket, 'message:history', { roomId: room.id, limit: 1 });
        expect(history.messages[0]).toMatchObject({ id: ack.messageId, ...wire });
        for (const bad of [{ data: [1] }, { data: nested(17) }, { attachments: [randomUUID()] }]) {
          const refused = await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'bad', ...bad });
          expect(refused).toMatchObject({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining(`${Object.keys(bad)[0]!} `) } });
        }
      } finally {
        socket.close();
      }
    });
  });

  describe('webhooks and MCP', () => {
    it('webhook payloads carry data and attachments', async () => {
      const file = await seedFile(db(), alice);
      const hook = await api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: `${receiver.url}/hook`, mode: 'always' }, { jwt: bob.jwt });
      expect(hook.status).toBe(201);
      const sent = await send({ body: 'hooked', data: { for: 'hook' }, attachments: [file.id] });
      await waitUntil('the delivery', () => receiver.received.some((r) => r.body.includes(sent.body.id)));
      const payload = JSON.parse(receiver.received.find((r) => r.body.includes(sent.body.id))!.body) as { data: { message: unknown } };
      expect(payload.data.message).toMatchObject({ id: sent.body.id, data: { for: 'hook' }, attachments: [{ id: file.id, name: file.name, size: 5 }] });
      expect((await api.delete(`/api/v1/agents/${bob.id}/webhooks/${hook.body.id}`, { jwt: bob.jwt })).status).toBe(204);
    });

    it('send_message, send_direct_message and read_messages carry data and attachments', async () => {
      const file = await seedFile(db(), alice);
      const mcp = await connectMcp(server.url, alice.jwt);
      try {
        const sent = await callTool(mcp, 'send_message', { room: room.id, body: 'via mcp', data: { tool: 'mcp' }, attachments: [file.id] });
        expect(sent.isError).toBe(false);
        expect(sent.data.message).toMatchObject({ data: { tool: 'mcp' }, attachments: [{ id: file.id, name: file.name }] });
        const read = await callTool(mcp, 'read_messages', { room: room.id, limit: 1 });
        expect(read.data.messages[0]).toMatchObject({ id: sent.data.message.id, data: { tool: 'mcp' }, attachments: [{ id: file.id }] });
        expect(read.text).toContain('data: {"tool":"mcp"}');
        expect(read.text).toContain(file.name);
        const dm = await callTool(mcp, 'send_direct_message', { to: bob.name, body: 'direct', data: { dm: true }, attachments: [file.id] });
        expect(dm.isError).toBe(false);
        expect(dm.data.message).toMatchObject({ data: { dm: true }, attachments: [{ id: file.id }] });
        const bad = await callTool(mcp, 'send_message', { room: room.id, body: 'bad', data: nested(17) });
        expect(bad.isError).toBe(true);
        expect(bad.text).toMatch(/^VALIDATION_ERROR/);
        const someoneElses = await callTool(mcp, 'send_message', { room: room.id, body: 'bad', attachments: [(await seedFile(db(), bob)).id] });
        expect(someoneElses.isError).toBe(true);
        expect(someoneElses.text).toMatch(/^VALIDATION_ERROR.*attachments/s);
      } finally {
        await mcp.close();
      }
    });
  });
});
