import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AmsClient } from '@agent-messaging/client';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { newAdmin, newAgent, newRoom, scopedSession, sendMessage, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

interface Line { room?: { id: string; lastSeq: number }; id?: string; seq?: number; senderId?: string; body?: string; deletedAt?: string | null }

// docs/retention.md, Export: GET /api/v1/rooms/:id/export.
describe('room export', { timeout: 120_000 }, () => {
  const { server, api } = useTestServer();
  const exportUrl = (roomId: string, format?: string) => `${server.url}/api/v1/rooms/${roomId}/export${format === undefined ? '' : `?format=${format}`}`;
  const get = (roomId: string, jwt: string, format?: string, signal?: AbortSignal) => fetch(exportUrl(roomId, format), { headers: { authorization: `Bearer ${jwt}` }, signal });
  const lines = (text: string): Line[] => text.trimEnd().split('\n').map((l) => JSON.parse(l) as Line);

  it('NDJSON: {room} first, then every message in seq order as REST gives it, tombstones included; attachment; audited', async () => {
    const admin = await newAdmin(api);
    const [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    const room = await newRoom(api, admin, [alice, bob]);
    const first = await sendMessage(api, alice, room.id, 'first line\nsecond line');
    const gone = await sendMessage(api, bob, room.id, 'to be deleted');
    expect((await api.delete(`/api/v1/rooms/${room.id}/messages/${gone.id}`, { jwt: bob.jwt })).status).toBe(204);
    const reply = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'a reply', replyTo: first.id }, { jwt: bob.jwt });

    const res = await get(room.id, alice.jwt);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${room.slug}.ndjson"`);
    const [head, ...messages] = lines(await res.text());
    expect(head!.room).toMatchObject({ id: room.id, slug: room.slug, kind: 'group', lastSeq: 3, retentionDays: null, legalHold: false });
    const history = (await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: alice.jwt })).body.messages;
    expect(messages).toEqual(history);
    expect(messages.map((m) => m.seq)).toEqual([1, 2, 3]);
    expect(messages[1]).toMatchObject({ id: gone.id, body: '', deletedAt: expect.any(String) });
    expect(messages[2]).toMatchObject({ id: reply.body.id, threadId: first.id });

    const audit = await api.get(`/api/v1/audit?event=room-exported&subjectId=${room.id}`, { jwt: admin.jwt });
    expect(audit.body.records[0]).toMatchObject({ event: 'room-exported', actorId: alice.id, subjectId: room.id, detail: { format: 'ndjson' } });
  });

  it('Markdown: a transcript with times, names, bodies, files by name, replies indented', async () => {
    const admin = await newAdmin(api);
    const [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    const room = await newRoom(api, admin, [alice, bob]);
    const upload = await fetch(`${server.url}/api/v1/files?name=plan.txt`, { method: 'POST', headers: { authorization: `Bearer ${alice.jwt}`, 'content-type': 'text/plain' }, body: 'the plan' });
    const fileId = ((await upload.json()) as { id: string }).id;
    const root = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'the root message', attachments: [fileId] }, { jwt: alice.jwt });
    await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'a reply in the thread', replyTo: root.body.id }, { jwt: bob.jwt });

    const res = await get(room.id, bob.jwt, 'markdown');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${room.slug}.md"`);
    const text = await res.text();
    expect(text).toContain(`# ${room.name}`);
    expect(text).toContain(`- **${root.body.createdAt}** **${alice.name}**: the root message`);
    expect(text).toContain('  Files: plan.txt');
    expect(text).toMatch(new RegExp(`\\n {4}- \\*\\*[^*]+\\*\\* \\*\\*${bob.name}\\*\\*: a reply in the thread`));
  });

  it('who may export: an admin or a member with messages:read; a direct room only its members; bad format 400', async () => {
    const admin = await newAdmin(api);
    const [alice, outsider] = await Promise.all([newAgent(api), newAgent(api)]);
    const room = await newRoom(api, admin, [alice]);
    await sendMessage(api, alice, room.id, 'hello');
    const other = await newAdmin(api);
    expect((await get(room.id, other.jwt)).status).toBe(200); // an admin, not a member
    expect((await get(room.id, outsider.jwt)).status).toBe(403);
    expect((await get(UNKNOWN_ID, admin.jwt)).status).toBe(404);
    expect((await get('not-a-uuid', admin.jwt)).status).toBe(400);
    expect((await fetch(exportUrl(room.id))).status).toBe(401);
    const badFormat = await get(room.id, alice.jwt, 'xml');
    expect(badFormat.status).toBe(400);
    expect(((await badFormat.json()) as { details: Record<string, string> }).details).toHaveProperty('format');
    const writeOnly = await scopedSession(api, alice, { actions: ['messages:write', 'rooms:read'] });
    expect((await get(room.id, writeOnly)).status).toBe(403);
    const elsewhere = await scopedSession(api, alice, { rooms: [UNKNOWN_ID] });
    expect((await get(room.id, elsewhere)).status).toBe(403);

    const direct = await api.post('/api/v1/direct-rooms', { agentId: outsider.id }, { jwt: alice.jwt });
    await sendMessage(api, alice, direct.body.id, 'private');
    expect((await get(direct.body.id, outsider.jwt)).status).toBe(200);
    expect((await get(direct.body.id, admin.jwt)).status).toBe(404);
  });

  it('streams a room being written to: a gapless prefix in seq order up to lastSeq when it began', async () => {
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    const sendMany = async (agent: TestAgent, from: number, count: number) => {
      for (let i = from; i < from + count; i += 25) {
        await Promise.all(Array.from({ length: Math.min(25, from + count - i) }, (_, k) => sendMessage(api, agent, room.id, `message ${i + k} ${'x'.repeat(200)}`)));
      }
    };
    await sendMany(alice, 0, 600);

    const res = await get(room.id, alice.jwt);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const first = await reader.read();
    text += decoder.decode(first.value, { stream: true });
    // Written to while the export is read.
    const writing = sendMany(alice, 600, 100);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    await writing;
    const [head, ...messages] = lines(text);
    const seqs = messages.map((m) => m.seq!);
    expect(seqs.length).toBe(head!.room!.lastSeq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(seqs.length).toBeGreaterThanOrEqual(600);

    // The export of the room as it is now holds everything written since.
    const whole = lines(await (await get(room.id, alice.jwt)).text());
    expect(whole.length).toBe(701);
  });

  it('a client that goes away mid-export releases it: the reads stop before the room is read through', async () => {
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    // 20,000 messages of 1 KB written straight into the store (sends would take long): far more than socket buffers hold.
    const db = server.app.ctx.database.db;
    const total = 20_000;
    const start = Date.now() - total;
    for (let from = 1; from <= total; from += 500) {
      await db.insertInto('messages').values(Array.from({ length: 500 }, (_, i) => ({
        id: randomUUID(), room_id: room.id, sender_id: alice.id, body: `seeded ${from + i} ${'z'.repeat(1000)}`, mentions: null, reply_to: null,
        client_msg_id: null, created_at: new Date(start + from + i).toISOString(), seq: from + i,
      }))).execute();
    }
    await db.updateTable('rooms').set({ last_seq: total }).where('id', '=', room.id).execute();

    const retention = server.app.ctx.retention;
    const original = retention.exportRoom.bind(retention);
    const observed = { chunks: 0, closed: false };
    retention.exportRoom = async (...args) => {
      const made = await original(...args);
      const inner = made.chunks;
      made.chunks = (async function* watched() {
        try {
          for await (const chunk of inner) {
            observed.chunks++;
            yield chunk;
          }
        } finally {
          observed.closed = true;
        }
      })();
      return made;
    };
    try {
      const controller = new AbortController();
      const aborted = await get(room.id, alice.jwt, 'ndjson', controller.signal);
      await aborted.body!.getReader().read();
      controller.abort();
      await waitUntil('the export released after the abort', () => observed.closed);
      // 100 pages of 200 and the {room} line: it stopped well before the end.
      expect(observed.chunks).toBeLessThan(60);
    } finally {
      retention.exportRoom = original;
    }
    await waitUntil('the service answers after the abort', async () => (await api.get('/healthz')).status === 200);
    const whole = lines(await (await get(room.id, alice.jwt)).text());
    expect(whole.length).toBe(total + 1);
  });

  it('the client library and ams: updateRoom / ams rooms update, exportRoom / ams export ROOM [--format markdown]', async () => {
    await ensureBuilt();
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    await sendMessage(api, alice, room.id, 'exported by the client');
    const client = new AmsClient({ url: server.url, apiToken: admin.apiToken });
    try {
      expect(await client.updateRoom(room.slug, { retentionDays: 90, legalHold: true })).toMatchObject({ id: room.id, retentionDays: 90, legalHold: true });
      const stream = await client.exportRoom(room.slug, 'ndjson');
      const text = await new Response(stream).text();
      expect(lines(text).map((l) => l.body ?? 'room')).toEqual(['room', 'exported by the client']);
    } finally {
      await client.close();
    }
    const env = { AMS_URL: server.url, AMS_API_TOKEN: admin.apiToken };
    const updated = await runAms(env, 'rooms', 'update', room.slug, '--retention-days', 'default', '--legal-hold', 'off');
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ retentionDays: null, legalHold: false });
    expect((await runAms(env, 'rooms', 'update', room.slug, '--retention-days', '1.5')).code).toBe(2);
    const ndjson = await runAms({ ...env, AMS_API_TOKEN: alice.apiToken }, 'export', room.slug);
    expect(ndjson.code).toBe(0);
    expect(lines(ndjson.stdout)[0]!.room).toMatchObject({ id: room.id });
    const md = await runAms(env, 'export', room.id, '--format', 'markdown');
    expect(md.code).toBe(0);
    expect(md.stdout).toContain(`**${alice.name}**: exported by the client`);
    expect((await runAms(env, 'export', room.id, '--format', 'pdf')).code).toBe(2);
  });
});
