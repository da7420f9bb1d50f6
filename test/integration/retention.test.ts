import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createRetentionService } from '../../src/core/retention/retention.service.js';
import { claimSweep, deleteMessages, oldestMessages } from '../../src/core/retention/retention.store.js';
import { newAdmin, newAgent, newRoom, scopedSession, sendMessage, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { untilPast, waitUntil } from '../helpers/wait.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { connectReady, emitWithAck } from '../helpers/ws.js';

const DAY_MS = 24 * 3600 * 1000;
const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

// docs/retention.md: per-room retention and legal hold, the sweep, oldestSeq.
describe('retention', () => {
  // The timer stays out of the way: these tests call the sweep with the time they need.
  const { server, api } = useTestServer({ config: { retention: { defaultDays: null, sweepIntervalMs: 3_600_000 } } });
  const db = () => server.app.ctx.database.db;
  const patch = (roomId: string, body: unknown, jwt: string) => api.request('PATCH', `/api/v1/rooms/${roomId}`, { body, jwt });
  const upload = async (agent: TestAgent, name: string, text: string): Promise<string> => {
    const res = await fetch(`${server.url}/api/v1/files?name=${name}`, { method: 'POST', headers: { authorization: `Bearer ${agent.jwt}`, 'content-type': 'text/plain' }, body: text });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  };
  const send = async (agent: TestAgent, roomId: string, body: Record<string, unknown>) => {
    const res = await api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
    expect(res.status).toBe(201);
    return res.body as { id: string; seq: number; createdAt: string };
  };

  it('PATCH /api/v1/rooms/:id: an admin sets retentionDays and legalHold; Room objects carry both; bad values are 400 keyed by field', async () => {
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    const listed = (await api.get('/api/v1/rooms', { jwt: admin.jwt })).body.rooms.find((r: { id: string }) => r.id === room.id);
    expect(listed).toMatchObject({ retentionDays: null, legalHold: false });

    const set = await patch(room.id, { retentionDays: 30, legalHold: true }, admin.jwt);
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: room.id, slug: room.slug, kind: 'group', retentionDays: 30, legalHold: true });
    expect((await patch(room.id, { legalHold: false }, admin.jwt)).body).toMatchObject({ retentionDays: 30, legalHold: false });
    expect((await patch(room.id, { retentionDays: null }, admin.jwt)).body).toMatchObject({ retentionDays: null, legalHold: false });
    expect((await patch(room.id, { retentionDays: 36_500 }, admin.jwt)).body).toMatchObject({ retentionDays: 36_500 });

    for (const [body, field] of [
      [{ retentionDays: 0 }, 'retentionDays'], [{ retentionDays: 36_501 }, 'retentionDays'], [{ retentionDays: 1.5 }, 'retentionDays'],
      [{ retentionDays: '30' }, 'retentionDays'], [{ legalHold: 'yes' }, 'legalHold'], [{}, 'retentionDays'],
    ] as const) {
      const res = await patch(room.id, body, admin.jwt);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(res.body.details)).toEqual([field]);
    }
    expect((await patch(room.id, [], admin.jwt)).status).toBe(400);
    expect((await patch(room.id, { retentionDays: 7 }, alice.jwt)).status).toBe(403);
    expect((await patch(room.id, { retentionDays: 7 }, '')).status).toBe(401);
    expect((await patch(UNKNOWN_ID, { retentionDays: 7 }, admin.jwt)).status).toBe(404);
    // A scoped admin token needs `admin`.
    const readOnly = await scopedSession(api, admin, { actions: ['messages:read', 'rooms:read'] });
    expect((await patch(room.id, { retentionDays: 7 }, readOnly)).status).toBe(403);
    // Unchanged by the refusals.
    expect((await patch(room.id, { legalHold: false }, admin.jwt)).body).toMatchObject({ retentionDays: 36_500, legalHold: false });

    // A direct room: 400 to one of its members, 404 to anyone else.
    const direct = await api.post('/api/v1/direct-rooms', { agentId: alice.id }, { jwt: admin.jwt });
    const refused = await patch(direct.body.id, { retentionDays: 7 }, admin.jwt);
    expect(refused.status).toBe(400);
    expect(refused.body.details).toHaveProperty('id');
    expect(refused.body.details.id).toMatch(/direct/);
    const other = await newAdmin(api);
    expect((await patch(direct.body.id, { retentionDays: 7 }, other.jwt)).status).toBe(404);
    expect((await api.get('/api/v1/rooms', { jwt: alice.jwt })).body.rooms.find((r: { id: string }) => r.id === direct.body.id)).toMatchObject({ retentionDays: null, legalHold: false });
  });

  it('the sweep deletes expired messages for good with their search entries, attention and the files they alone carried; oldestSeq says where the room starts', async () => {
    const admin = await newAdmin(api);
    const [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    const room = await newRoom(api, admin, [alice, bob]);
    expect((await patch(room.id, { retentionDays: 1 }, admin.jwt)).status).toBe(200);
    const onlyOld = await upload(alice, 'only-old.txt', 'old bytes');
    const shared = await upload(alice, 'shared.txt', 'shared bytes');
    const usageBefore = Number((await db().selectFrom('file_usage').select('bytes').where('agent_id', '=', alice.id).executeTakeFirstOrThrow()).bytes);
    const old1 = await send(alice, room.id, { body: 'ancient quokkaword for bob', mentions: [bob.id], attachments: [onlyOld, shared] });
    const old2 = await send(bob, room.id, { body: 'a reply to the ancient one', replyTo: old1.id });
    await untilPast(new Date(old2.createdAt), 5);
    const kept = await send(bob, room.id, { body: 'a newer reply keeps its thread link', replyTo: old1.id, attachments: [] });
    const kept2 = await send(alice, room.id, { body: 'still here', attachments: [shared] });
    const sync = () => api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: bob.jwt });
    expect((await sync()).body.oldestSeq).toBe(old1.seq);

    // Everything created before `kept` is older than a day at this `now`.
    const deleted = await server.app.ctx.retention.sweep(new Date(kept.createdAt).getTime() + DAY_MS);
    expect(deleted).toBe(2);

    const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
    expect(history.body.messages.map((m: { id: string }) => m.id)).toEqual([kept2.id, kept.id]);
    expect(history.body.oldestSeq).toBe(kept.seq);
    const caughtUp = await sync();
    expect(caughtUp.body).toMatchObject({ oldestSeq: kept.seq, lastSeq: kept2.seq, hasMore: false });
    expect(caughtUp.body.messages.map((m: { id: string }) => m.id)).toEqual([kept.id, kept2.id]);
    // The thread link of the surviving reply stays, as an id.
    expect(caughtUp.body.messages[0]).toMatchObject({ threadId: old1.id, replyTo: old1.id });
    const { socket } = await connectReady(server.url, bob.jwt);
    try {
      const ack = await emitWithAck(socket, 'room:sync', { roomId: room.id, afterSeq: 0 });
      expect(ack.oldestSeq).toBe(kept.seq);
      expect(ack.messages.map((m: { id: string }) => m.id)).toEqual([kept.id, kept2.id]);
      const page = await emitWithAck(socket, 'message:history', { roomId: room.id });
      expect(page.oldestSeq).toBe(kept.seq);
    } finally {
      socket.close();
    }

    const mcp = await connectMcp(server.url, bob.jwt);
    try {
      const read = await callTool(mcp, 'read_messages', { room: room.id, afterSeq: 0 });
      expect(read.data).toMatchObject({ oldestSeq: kept.seq, lastSeq: kept2.seq });
      expect(read.text).toContain(`Messages up to seq ${kept.seq - 1} were deleted by the room's retention.`);
      expect((await callTool(mcp, 'read_messages', { room: room.id })).data).toMatchObject({ oldestSeq: kept.seq });
    } finally {
      await mcp.close();
    }

    // Search, attention, attachments and the file carried only by deleted messages are gone.
    const search = await api.get(`/api/v1/search/messages?q=quokkaword&roomId=${room.id}`, { jwt: bob.jwt });
    expect(search.body.results).toEqual([]);
    const attention = await db().selectFrom('message_attention').select('message_id').where('room_id', '=', room.id).execute();
    expect(attention.map((a) => a.message_id)).not.toContain(old1.id);
    const inbox = await api.get(`/api/v1/inbox?roomId=${room.id}`, { jwt: bob.jwt });
    expect(JSON.stringify(inbox.body)).not.toContain(old1.id);
    expect(await db().selectFrom('messages').select('id').where('id', 'in', [old1.id, old2.id]).execute()).toEqual([]);
    expect(await db().selectFrom('message_attachments').select('file_id').where('message_id', '=', old1.id).execute()).toEqual([]);
    expect((await fetch(`${server.url}/api/v1/files/${onlyOld}`, { headers: { authorization: `Bearer ${alice.jwt}` } })).status).toBe(404);
    expect(await db().selectFrom('file_chunks').select('n').where('file_id', '=', onlyOld).execute()).toEqual([]);
    expect((await fetch(`${server.url}/api/v1/files/${shared}`, { headers: { authorization: `Bearer ${bob.jwt}` } })).status).toBe(200);
    const usageAfter = Number((await db().selectFrom('file_usage').select('bytes').where('agent_id', '=', alice.id).executeTakeFirstOrThrow()).bytes);
    expect(usageAfter).toBe(usageBefore - 'old bytes'.length);

    // A room emptied entirely: oldestSeq null, lastSeq unchanged.
    await server.app.ctx.retention.sweep(Date.now() + 2 * DAY_MS);
    const empty = await sync();
    expect(empty.body).toMatchObject({ messages: [], oldestSeq: null, lastSeq: kept2.seq });
    expect((await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt })).body).toMatchObject({ messages: [], oldestSeq: null });
    // New messages go on numbering from lastSeq.
    expect((await send(alice, room.id, { body: 'after the sweep' })).seq).toBe(kept2.seq + 1);
  });

  it('a room under legal hold keeps everything; a hold set while a sweep runs stops the room before its next batch', async () => {
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const held = await newRoom(api, admin, [alice]);
    expect((await patch(held.id, { retentionDays: 1, legalHold: true }, admin.jwt)).status).toBe(200);
    const heldMessage = await sendMessage(api, alice, held.id, 'held');
    const racing = await newRoom(api, admin, [alice]);
    expect((await patch(racing.id, { retentionDays: 1 }, admin.jwt)).status).toBe(200);
    for (let i = 0; i < 7; i++) await sendMessage(api, alice, racing.id, `racing ${i}`);
    const batches: number[] = [];
    const sweeper = createRetentionService({
      db: db(), authz: server.app.ctx.authz, rooms: server.app.ctx.rooms, defaultDays: null, sweepIntervalMs: 3_600_000, batchSize: 3,
      async afterBatch(roomId, deleted) {
        if (roomId !== racing.id) return;
        batches.push(deleted);
        // The operator puts the room under hold while the sweep runs.
        expect((await patch(racing.id, { legalHold: true }, admin.jwt)).status).toBe(200);
      },
    });
    await sweeper.sweep(Date.now() + 2 * DAY_MS);
    expect(batches).toEqual([3]);
    expect((await oldestMessages(db(), racing.id, 0, 100)).length).toBe(4);
    expect((await oldestMessages(db(), held.id, 0, 100)).map((m) => m.id)).toEqual([heldMessage.id]);
    // Lifted, the next sweep goes on.
    expect((await patch(racing.id, { legalHold: false }, admin.jwt)).status).toBe(200);
    await server.app.ctx.retention.sweep(Date.now() + 2 * DAY_MS);
    expect(await oldestMessages(db(), racing.id, 0, 100)).toEqual([]);
  });

  it('a batch is one transaction: stopped in the middle, nothing of it is deleted', async () => {
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    const file = await upload(alice, 'kept.txt', 'kept bytes');
    const sent = await send(alice, room.id, { body: 'zebraword survives', attachments: [file] });
    const batch = await oldestMessages(db(), room.id, 0, 10);
    await expect(db().transaction().execute(async (trx) => {
      expect(await deleteMessages(trx, room.id, batch)).toBe(true);
      throw new Error('killed mid-sweep');
    })).rejects.toThrow('killed mid-sweep');
    expect((await oldestMessages(db(), room.id, 0, 10)).map((m) => m.id)).toEqual([sent.id]);
    expect((await api.get(`/api/v1/search/messages?q=zebraword&roomId=${room.id}`, { jwt: alice.jwt })).body.results.map((m: { id: string }) => m.id)).toEqual([sent.id]);
    expect((await fetch(`${server.url}/api/v1/files/${file}`, { headers: { authorization: `Bearer ${alice.jwt}` } })).status).toBe(200);
  });

  it('the sweep is claimed by one node per period', async () => {
    await sql`delete from service_settings where key = 'retention_sweep_due'`.execute(db());
    const now = Date.now();
    const claims = await Promise.all([claimSweep(db(), now, 60_000), claimSweep(db(), now, 60_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await claimSweep(db(), now + 30_000, 60_000)).toBe(false);
    expect(await claimSweep(db(), now + 60_000, 60_000)).toBe(true);
  });
});

// RETENTION_DAYS=0.0001 (about 9 s) and a sweep every second: the behaviour end to end, on the timer.
describe('retention on the timer (RETENTION_DAYS)', () => {
  const { server, api } = useTestServer({ config: { retention: { defaultDays: 0.0001, sweepIntervalMs: 1000 } } });

  it('messages older than RETENTION_DAYS go by themselves; a room with its own retention or under legal hold keeps them', async () => {
    await sql`delete from service_settings where key = 'retention_sweep_due'`.execute(server.app.ctx.database.db);
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const [swept, own, held] = await Promise.all([newRoom(api, admin, [alice]), newRoom(api, admin, [alice]), newRoom(api, admin, [alice])]);
    expect((await api.request('PATCH', `/api/v1/rooms/${own.id}`, { body: { retentionDays: 1 }, jwt: admin.jwt })).status).toBe(200);
    expect((await api.request('PATCH', `/api/v1/rooms/${held.id}`, { body: { legalHold: true }, jwt: admin.jwt })).status).toBe(200);
    for (const room of [swept, own, held]) await sendMessage(api, alice, room.id, 'short-lived');
    const history = async (roomId: string) => (await api.get(`/api/v1/rooms/${roomId}/messages`, { jwt: alice.jwt })).body as { messages: unknown[]; oldestSeq: number | null };
    expect((await history(swept.id)).oldestSeq).toBe(1);
    await waitUntil('the sweep deleted the expired message', async () => (await history(swept.id)).messages.length === 0, 20_000, 200);
    expect((await history(swept.id)).oldestSeq).toBeNull();
    expect((await history(own.id)).messages).toHaveLength(1);
    expect((await history(held.id)).messages).toHaveLength(1);
  });
});
