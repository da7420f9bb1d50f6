import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady, waitFor } from '../helpers/ws.js';

const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

// docs/threads-and-edits.md: editing and deleting a message.
describe('editing and deleting a message', () => {
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
  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
    room = await newRoom(api, admin, [alice, bob]);
  });

  const send = async (body: string, jwt = alice.jwt, extra: Record<string, unknown> = {}) => (await api.post(`/api/v1/rooms/${room.id}/messages`, { body, ...extra }, { jwt })).body as { id: string; seq: number; createdAt: string };
  const patch = (id: string, body: unknown, jwt = alice.jwt, roomId = room.id) => api.request('PATCH', `/api/v1/rooms/${roomId}/messages/${id}`, { body, jwt });
  const del = (id: string, jwt = alice.jwt, roomId = room.id) => api.request('DELETE', `/api/v1/rooms/${roomId}/messages/${id}`, { jwt });
  const search = (q: string) => api.get(`/api/v1/search/messages?q=${encodeURIComponent(q)}&roomId=${room.id}`, { jwt: bob.jwt });
  const read = async (id: string) => ((await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0&limit=100`, { jwt: bob.jwt })).body.messages as { id: string }[]).find((m) => m.id === id);

  it('PATCH by the sender: 200 with the Message carrying editedAt; history, catch-up and search show the new text only', async () => {
    const sent = await send('original wording zebra');
    const res = await patch(sent.id, { body: 'corrected wording giraffe' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: sent.id, seq: sent.seq, body: 'corrected wording giraffe', editedAt: expect.stringMatching(/Z$/), deletedAt: null, createdAt: sent.createdAt });
    expect(await read(sent.id)).toEqual(res.body);
    expect((await search('giraffe')).body.results.map((m: { id: string }) => m.id)).toEqual([sent.id]);
    expect((await search('zebra')).body.results).toEqual([]);
    const audit = await listAudit(server.app.ctx.database.db, 'message-edited', 1000);
    expect(audit.find((r) => r.subjectId === sent.id)).toMatchObject({ actorId: alice.id, detail: { roomId: room.id } });
  });

  it('concurrent edits, then a delete: the search entry always equals the stored body, or is gone', async () => {
    const words = Array.from({ length: 20 }, (_, i) => `concurrent${String.fromCharCode(97 + i)}word`);
    const sent = await send('concurrentoriginalword');
    const edits = await Promise.all(words.map((word) => patch(sent.id, { body: `edited to ${word}` })));
    expect(edits.map((r) => r.status)).toEqual(words.map(() => 200));
    const stored = ((await read(sent.id)) as unknown as { body: string }).body;
    const found: string[] = [];
    for (const word of [...words, 'concurrentoriginalword']) {
      if ((await search(word)).body.results.length > 0) found.push(word);
    }
    // Only the word of the body that won is findable.
    expect(found).toEqual([stored.split(' ').pop()]);
    const removed = await Promise.all([del(sent.id), patch(sent.id, { body: 'edited to concurrentlateword' })]);
    expect(removed[0]!.status).toBe(204);
    for (const word of [...words, 'concurrentoriginalword', 'concurrentlateword']) {
      expect((await search(word)).body.results, word).toEqual([]);
    }
  });

  it('PATCH: 403 for anyone but the sender (an admin too), 400 for a bad body, 404 for unknown room or message', async () => {
    const sent = await send('mine');
    expect((await patch(sent.id, { body: 'theirs' }, bob.jwt)).status).toBe(403);
    expect((await patch(sent.id, { body: 'theirs' }, admin.jwt)).status).toBe(403);
    for (const body of [{ body: '' }, { body: 'x'.repeat(16_385) }, {}, { body: 7 }]) {
      const res = await patch(sent.id, body);
      expect(res.status).toBe(400);
      expect(res.body.details).toHaveProperty('body');
    }
    expect((await patch(UNKNOWN_ID, { body: 'x' })).status).toBe(404);
    expect((await patch(sent.id, { body: 'x' }, alice.jwt, UNKNOWN_ID)).status).toBe(404);
    expect((await patch('nope', { body: 'x' })).status).toBe(400);
    expect((await api.request('PATCH', `/api/v1/rooms/${room.id}/messages/${sent.id}`, { body: { body: 'x' } })).status).toBe(401);
    expect((await read(sent.id))).toMatchObject({ body: 'mine', editedAt: null });
  });

  it('DELETE by the sender: 204, a tombstone (same id, seq, editedAt; body "", mentions empty, deletedAt); search forgets it; then 404', async () => {
    const sent = await send('secret password hunter2', alice.jwt, { mentions: [bob.id] });
    const edited = (await patch(sent.id, { body: 'secret password hunter3' })).body;
    const res = await del(sent.id);
    expect(res.status).toBe(204);
    const tombstone = await read(sent.id);
    expect(tombstone).toMatchObject({ id: sent.id, seq: sent.seq, body: '', mentions: [], editedAt: edited.editedAt, deletedAt: expect.stringMatching(/Z$/) });
    expect((await search('hunter3')).body.results).toEqual([]);
    expect((await search('password')).body.results.map((m: { id: string }) => m.id)).not.toContain(sent.id);
    expect((await del(sent.id)).status).toBe(404);
    expect((await patch(sent.id, { body: 'back' })).status).toBe(404);
    const audit = await listAudit(server.app.ctx.database.db, 'message-deleted', 1000);
    expect(audit.find((r) => r.subjectId === sent.id)).toMatchObject({ actorId: alice.id });
    // A deleted message cannot be replied to; its earlier replies still count.
  });

  it('DELETE: an admin may delete anyone\'s message in a group room; another agent gets 403', async () => {
    const sent = await send('moderate me');
    expect((await del(sent.id, bob.jwt)).status).toBe(403);
    expect((await del(sent.id, admin.jwt)).status).toBe(204);
    expect(await read(sent.id)).toMatchObject({ body: '', deletedAt: expect.any(String) });
  });

  it('a deleted root keeps its replies counted; a reply to a deleted message is 400 details.replyTo', async () => {
    const root = await send('root to delete');
    await send('a reply', bob.jwt, { replyTo: root.id });
    const reply = await send('another reply', bob.jwt, { replyTo: root.id });
    expect((await del(reply.id, bob.jwt)).status).toBe(204);
    expect((await del(root.id)).status).toBe(204);
    expect(await read(root.id)).toMatchObject({ replyCount: 2, deletedAt: expect.any(String) });
    const refused = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'late', replyTo: root.id }, { jwt: bob.jwt });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.details)).toEqual(['replyTo']);
    const thread = await api.get(`/api/v1/rooms/${room.id}/messages/${root.id}/thread`, { jwt: bob.jwt });
    expect(thread.body.root).toMatchObject({ body: '', replyCount: 2 });
    expect(thread.body.replies.map((r: { body: string }) => r.body)).toEqual(['a reply', '']);
  });

  it('live sockets of the room get message:updated and message:deleted', async () => {
    const { socket } = await connectReady(server.url, bob.jwt);
    try {
      const sent = await send('live one');
      const updated = waitFor(socket, 'message:updated', (m: { id: string }) => m.id === sent.id);
      const edited = (await patch(sent.id, { body: 'live two' })).body;
      expect(await updated).toEqual({ id: sent.id, roomId: room.id, seq: sent.seq, body: 'live two', editedAt: edited.editedAt, data: null, attachments: [] });
      const deleted = waitFor(socket, 'message:deleted', (m: { id: string }) => m.id === sent.id);
      expect((await del(sent.id)).status).toBe(204);
      expect(await deleted).toEqual({ id: sent.id, roomId: room.id, seq: sent.seq, deletedAt: expect.stringMatching(/Z$/) });
      const sync = await new Promise<{ messages: { id: string; body: string; deletedAt: string | null }[] }>((resolve) => socket.emit('room:sync', { roomId: room.id, afterSeq: sent.seq - 1, limit: 1 }, resolve));
      expect(sync.messages[0]).toMatchObject({ id: sent.id, body: '', deletedAt: expect.any(String), editedAt: edited.editedAt });
    } finally {
      socket.disconnect();
    }
  });

  it('webhooks message.updated / message.deleted go to endpoints listing them, of members other than the actor', async () => {
    const hook = await api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: `${receiver.url}/bob`, mode: 'always', events: ['message.updated', 'message.deleted'] }, { jwt: bob.jwt });
    expect(hook.status).toBe(201);
    const own = await api.post(`/api/v1/agents/${alice.id}/webhooks`, { url: `${receiver.url}/alice`, mode: 'always', events: ['message.updated', 'message.deleted'] }, { jwt: alice.jwt });
    expect(own.status).toBe(201);
    const sent = await send('hooked');
    await patch(sent.id, { body: 'hooked, edited' });
    await del(sent.id);
    await waitUntil('two deliveries', () => receiver.received.filter((r) => r.path === '/bob').length >= 2);
    const bodies = receiver.received.filter((r) => r.path === '/bob').map((r) => JSON.parse(r.body) as { type: string; data: { message: { id: string; body: string } } });
    expect(bodies.map((b) => b.type).sort()).toEqual(['message.deleted', 'message.updated']);
    expect(bodies.every((b) => b.data.message.id === sent.id)).toBe(true);
    // Delivered once the message is a tombstone: as it is now, so the edited text is gone too.
    expect(bodies.find((b) => b.type === 'message.deleted')!.data.message).toMatchObject({ body: '', deletedAt: expect.any(String) });
    expect(receiver.received.filter((r) => r.path === '/alice')).toEqual([]); // alice acted: nothing for her
  });

  it('MCP edit_message, delete_message; read_messages shows editedAt and deletedAt', async () => {
    const mcp = await connectMcp(server.url, alice.jwt);
    try {
      const sent = await send('via mcp');
      const edited = await callTool(mcp, 'edit_message', { room: room.id, messageId: sent.id, body: 'via mcp, edited' });
      expect(edited.isError).toBe(false);
      expect(edited.data.message).toMatchObject({ id: sent.id, body: 'via mcp, edited', editedAt: expect.any(String) });
      const deleted = await callTool(mcp, 'delete_message', { room: room.id, messageId: sent.id });
      expect(deleted.data).toEqual({ deleted: true });
      const again = await callTool(mcp, 'delete_message', { room: room.id, messageId: sent.id });
      expect(again.isError).toBe(true);
      expect(again.text).toMatch(/^NOT_FOUND/);
      const others = await send('not yours', bob.jwt);
      expect((await callTool(mcp, 'edit_message', { room: room.id, messageId: others.id, body: 'x' })).text).toMatch(/^FORBIDDEN/);
      const readBack = await callTool(mcp, 'read_messages', { room: room.id, afterSeq: sent.seq - 1, limit: 1 });
      expect(readBack.data.messages[0]).toMatchObject({ id: sent.id, body: '', editedAt: expect.any(String), deletedAt: expect.any(String) });
      expect(readBack.text).toContain('deleted');
    } finally {
      await mcp.close();
    }
  });
});
