import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady, emitWithAck, record, roundTrip, waitFor, type ClientSocket } from '../helpers/ws.js';

const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';
const IDLE_SECONDS = 2;

interface Delta { roomId: string; messageId: string; seq: number; offset: number; text: string }
interface Msg { id: string; seq: number; body: string; streaming: boolean; streamEnd: string | null; editedAt: string | null; deletedAt: string | null; data: unknown }

// docs/streaming.md: streamed messages over REST and WebSocket.
describe('streamed messages', () => {
  let receiver: WebhookReceiver;
  const { server, api } = useTestServer(async () => {
    receiver = await startWebhookReceiver();
    return { config: { streamIdleSeconds: IDLE_SECONDS, webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } };
  });
  afterAll(() => receiver.close());
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let room: TestRoom;
  const sockets: ClientSocket[] = [];
  const open = async (agent: TestAgent): Promise<ClientSocket> => {
    const { socket } = await connectReady(server.url, agent.jwt);
    sockets.push(socket);
    return socket;
  };
  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob, carol] = await Promise.all([newAgent(api), newAgent(api), newAgent(api)]);
    room = await newRoom(api, admin, [alice, bob, carol]);
  });
  afterAll(() => {
    for (const socket of sockets) socket.disconnect();
  });

  const start = async (extra: Record<string, unknown> = {}, jwt = alice.jwt): Promise<Msg> => {
    const res = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: '', streaming: true, ...extra }, { jwt });
    expect(res.status).toBe(201);
    return res.body as Msg;
  };
  const append = (id: string, text: unknown, jwt = alice.jwt, roomId = room.id) => api.post(`/api/v1/rooms/${roomId}/messages/${id}/append`, { text }, { jwt });
  const end = (id: string, body: Record<string, unknown> = {}, jwt = alice.jwt) => api.post(`/api/v1/rooms/${room.id}/messages/${id}/end`, body, { jwt });
  const catchUp = async (id: string): Promise<Msg | undefined> =>
    ((await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0&limit=100`, { jwt: bob.jwt })).body.messages as Msg[]).find((m) => m.id === id);
  const search = (q: string) => api.get(`/api/v1/search/messages?q=${encodeURIComponent(q)}&roomId=${room.id}`, { jwt: bob.jwt });

  it('a send with streaming: true is stored at once (body "" allowed), delivered as message:new, with streaming and streamEnd', async () => {
    const reader = await open(bob);
    const created = waitFor<Msg>(reader, 'message:new', (m) => m.body === '' && m.streaming);
    const sent = await start();
    expect(sent).toMatchObject({ body: '', streaming: true, streamEnd: null, editedAt: null });
    expect(sent.seq).toBeGreaterThan(0);
    expect(await created).toMatchObject({ id: sent.id, streaming: true, streamEnd: null });
    expect(await catchUp(sent.id)).toMatchObject({ streaming: true, streamEnd: null });
    // A message sent whole says so too; "" is still refused without streaming.
    const whole = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'whole' }, { jwt: alice.jwt });
    expect(whole.body).toMatchObject({ streaming: false, streamEnd: null });
    const empty = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: '' }, { jwt: alice.jwt });
    expect(empty.status).toBe(400);
    expect(empty.body.details).toHaveProperty('body');
    expect((await end(sent.id, { body: 'done' })).status).toBe(200);
  });

  it('appends answer the length; readers get ordered deltas whose offsets join up; the end gives message:updated', async () => {
    const reader = await open(bob);
    const deltas = record<Delta>(reader, 'message:delta');
    const sent = await start();
    const updated = waitFor<Msg>(reader, 'message:updated', (m) => m.id === sent.id);
    const pieces = Array.from({ length: 60 }, (_, i) => `w${i} é😀 `);
    let expected = 0;
    for (const piece of pieces) {
      const res = await append(sent.id, piece);
      expect(res.status).toBe(200);
      expected += [...piece].length;
      expect(res.body).toEqual({ length: expected });
    }
    const whole = pieces.join('');
    await waitUntil('every delta arrived', () => deltas.filter((d) => d.messageId === sent.id).reduce((n, d) => n + [...d.text].length, 0) === expected);
    const mine = deltas.filter((d) => d.messageId === sent.id);
    // Merged: fewer deltas than appends; in order, each offset the length before it.
    let text = '';
    for (const d of mine) {
      expect(d).toMatchObject({ roomId: room.id, seq: sent.seq });
      expect(d.offset).toBe([...text].length);
      text += d.text;
    }
    expect(text).toBe(whole);
    const ended = await end(sent.id);
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ id: sent.id, body: whole, streaming: false, streamEnd: 'complete', editedAt: null });
    expect(await updated).toMatchObject({ id: sent.id, body: whole, editedAt: null, streaming: false, streamEnd: 'complete' });
    expect(await catchUp(sent.id)).toMatchObject({ body: whole, streamEnd: 'complete' });
  });

  it('refuses bad appends: another agent 403, ended 409, sent whole 409, unknown 404, deleted 404, past 16,384 400, NUL and lone surrogates 400', async () => {
    const sent = await start();
    expect((await append(sent.id, 'x', bob.jwt)).status).toBe(403);
    expect((await append(sent.id, 'x', admin.jwt)).status).toBe(403);
    expect((await append(UNKNOWN_ID, 'x')).status).toBe(404);
    for (const text of ['', 'a\u0000b', 'a\ud800b', '\udc00', 7, undefined]) {
      const res = await append(sent.id, text);
      expect(res.status, JSON.stringify(text)).toBe(400);
      expect(res.body.details).toHaveProperty('text');
    }
    expect((await append(sent.id, 'x'.repeat(16_000))).body).toEqual({ length: 16_000 });
    const over = await append(sent.id, 'y'.repeat(385));
    expect(over.status).toBe(400);
    expect(over.body.details).toHaveProperty('text');
    expect((await append(sent.id, 'y'.repeat(384))).body).toEqual({ length: 16_384 });
    expect((await end(sent.id)).status).toBe(200);
    expect((await append(sent.id, 'late')).status).toBe(409);
    expect((await end(sent.id)).status).toBe(409);
    const whole = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'whole' }, { jwt: alice.jwt });
    expect((await append(whole.body.id as string, 'x')).status).toBe(409);
    expect((await end(whole.body.id as string)).status).toBe(409);
    // Deleting an open message ends it as deleted: appends after are 404.
    const other = await start();
    expect((await append(other.id, 'some text')).status).toBe(200);
    expect((await api.request('DELETE', `/api/v1/rooms/${room.id}/messages/${other.id}`, { jwt: alice.jwt })).status).toBe(204);
    expect((await append(other.id, 'x')).status).toBe(404);
    expect((await end(other.id)).status).toBe(404);
    expect(await catchUp(other.id)).toMatchObject({ body: '', streaming: false, streamEnd: 'complete', deletedAt: expect.any(String) });
  });

  it('editing an open message is 409; an end with a body replaces the text, with data sets it; "" body is 400', async () => {
    const sent = await start({ body: 'draft ' });
    expect((await api.request('PATCH', `/api/v1/rooms/${room.id}/messages/${sent.id}`, { body: { body: 'edit' }, jwt: alice.jwt })).status).toBe(409);
    await append(sent.id, 'more');
    const bad = await end(sent.id, { body: '' });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toHaveProperty('body');
    const ended = await end(sent.id, { body: 'final answer kangaroo', data: { score: 3 } });
    expect(ended.body).toMatchObject({ body: 'final answer kangaroo', data: { score: 3 }, streamEnd: 'complete', editedAt: null });
  });

  it('search and mention attention wait for the end, then see the final text once', async () => {
    const sent = await start({ mentions: [bob.id] });
    await append(sent.id, 'wombat streaming words');
    // The stored text is brought up to date within a second: catch-up sees it, search does not.
    await waitUntil('the stored text caught up', async () => (await catchUp(sent.id))?.body === 'wombat streaming words');
    expect((await search('wombat')).body.results).toEqual([]);
    const inboxBefore = await api.get(`/api/v1/inbox?filter=attention`, { jwt: bob.jwt });
    expect(JSON.stringify(inboxBefore.body)).not.toContain(sent.id);
    await end(sent.id, { body: 'wombat final words' });
    expect((await search('wombat')).body.results.map((m: { id: string }) => m.id)).toEqual([sent.id]);
    const inboxAfter = await api.get(`/api/v1/inbox?filter=attention`, { jwt: bob.jwt });
    expect(JSON.stringify(inboxAfter.body)).toContain(sent.id);
  });

  it('message.created webhooks come once, at the end, with the final text', async () => {
    const hook = await api.post(`/api/v1/agents/${bob.id}/webhooks`, { url: `${receiver.url}/stream`, mode: 'always', events: ['message.created'] }, { jwt: bob.jwt });
    expect(hook.status).toBe(201);
    const sent = await start();
    await append(sent.id, 'hooked text');
    await waitUntil('the stored text caught up', async () => (await catchUp(sent.id))?.body === 'hooked text');
    expect(receiver.received.filter((r) => r.body.includes(sent.id))).toEqual([]);
    await end(sent.id, { body: 'hooked final' });
    await waitUntil('the webhook', () => receiver.received.some((r) => r.body.includes(sent.id)));
    const got = receiver.received.filter((r) => r.body.includes(sent.id));
    expect(got).toHaveLength(1);
    expect(JSON.parse(got[0]!.body)).toMatchObject({ type: 'message.created', data: { message: { id: sent.id, body: 'hooked final', streaming: false, streamEnd: 'complete' } } });
    await api.request('DELETE', `/api/v1/agents/${bob.id}/webhooks/${hook.body.id as string}`, { jwt: bob.jwt });
  });

  it('an end with no text at all deletes the message (tombstone, message:deleted)', async () => {
    const reader = await open(bob);
    const sent = await start();
    const deleted = waitFor<{ id: string }>(reader, 'message:deleted', (m) => m.id === sent.id);
    const ended = await end(sent.id);
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ id: sent.id, body: '', streaming: false, streamEnd: 'complete', deletedAt: expect.any(String) });
    await deleted;
  });

  it('limits: 200 appends per message per second (429 / RATE_LIMIT_EXCEEDED, nothing appended), 20 open messages per agent', async () => {
    const writer = await open(carol);
    const sent = await emitWithAck<{ messageId: string }>(writer, 'message:send', { roomId: room.id, body: '', streaming: true });
    const answers = await Promise.all(Array.from({ length: 260 }, () =>
      emitWithAck<{ ok?: boolean; error?: { code: string } }>(writer, 'message:append', { roomId: room.id, messageId: sent.messageId, text: 'a' })));
    const ok = answers.filter((a) => a.ok === true).length;
    const refused = answers.filter((a) => a.error?.code === 'RATE_LIMIT_EXCEEDED').length;
    expect(ok + refused).toBe(260);
    expect(refused).toBeGreaterThan(0);
    expect(ok).toBeGreaterThanOrEqual(200);
    const ended = await end(sent.messageId, {}, carol.jwt);
    expect(ended.body.body).toBe('a'.repeat(ok));
    const opened: Msg[] = [];
    for (let i = 0; i < 20; i++) opened.push(await start({}, carol.jwt));
    const extra = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: '', streaming: true }, { jwt: carol.jwt });
    expect(extra.status).toBe(409);
    await end(opened[0]!.id, { body: 'x' }, carol.jwt);
    expect((await api.post(`/api/v1/rooms/${room.id}/messages`, { body: '', streaming: true }, { jwt: carol.jwt })).status).toBe(201);
  });

  it('over WebSocket: message:append acks {ok, length}, message:end acks {message}; appends are not in the event budget', async () => {
    const writer = await open(alice);
    const reader = await open(bob);
    const writerDeltas = record<Delta>(writer, 'message:delta');
    const deltas = record<Delta>(reader, 'message:delta');
    const sent = await emitWithAck<{ messageId: string; seq: number }>(writer, 'message:send', { roomId: room.id, body: '', streaming: true });
    // Far past the 30 events per second of a connection's budget.
    const acks = await Promise.all(Array.from({ length: 100 }, (_, i) => emitWithAck<{ ok: boolean; length: number }>(writer, 'message:append', { roomId: room.id, messageId: sent.messageId, text: `${i % 10}` })));
    expect(acks.map((a) => a.length)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(acks.every((a) => a.ok === true)).toBe(true);
    const refused = await emitWithAck<{ error: { code: string } }>(reader, 'message:append', { roomId: room.id, messageId: sent.messageId, text: 'x' });
    expect(refused.error.code).toBe('FORBIDDEN');
    const ended = await emitWithAck<{ message: Msg }>(writer, 'message:end', { roomId: room.id, messageId: sent.messageId });
    expect(ended.message).toMatchObject({ id: sent.messageId, streaming: false, streamEnd: 'complete', body: acks.map((_, i) => `${i % 10}`).join('') });
    await waitUntil('deltas', () => deltas.filter((d) => d.messageId === sent.messageId).map((d) => d.text).join('') === ended.message.body);
    await roundTrip(writer);
    expect(writerDeltas.filter((d) => d.messageId === sent.messageId)).toEqual([]);
    const late = await emitWithAck<{ error: { code: string } }>(writer, 'message:append', { roomId: room.id, messageId: sent.messageId, text: 'x' });
    expect(late.error.code).toBe('CONFLICT');
  });

  it('an end racing appends: every acknowledged append is in the final text, the others refused', async () => {
    const writer = await open(alice);
    const sent = await emitWithAck<{ messageId: string }>(writer, 'message:send', { roomId: room.id, body: '', streaming: true });
    const appends = Array.from({ length: 50 }, (_, i) => emitWithAck<{ ok?: boolean; length?: number; error?: { code: string } }>(writer, 'message:append', { roomId: room.id, messageId: sent.messageId, text: `<${i}>` }));
    const ending = end(sent.messageId);
    const answers = await Promise.all(appends);
    const ended = await ending;
    expect(ended.status).toBe(200);
    answers.forEach((answer, i) => {
      if (answer.ok) expect(ended.body.body).toContain(`<${i}>`);
      else expect(answer.error?.code).toBe('CONFLICT');
    });
    expect(answers.filter((a) => a.ok).map((a, i) => `<${i}>`).join('')).toBe(ended.body.body);
  });

  it('a reader reconnecting mid-stream sees the prefix in catch-up, then the deltas after it (offsets tell a gap)', async () => {
    const sent = await start();
    await append(sent.id, 'first part. ');
    await waitUntil('the prefix is stored', async () => (await catchUp(sent.id))?.body === 'first part. ');
    const reader = await open(bob);
    const deltas = record<Delta>(reader, 'message:delta');
    const page = await emitWithAck<{ messages: Msg[] }>(reader, 'room:sync', { roomId: room.id, afterSeq: sent.seq - 1 });
    const prefix = page.messages.find((m) => m.id === sent.id)!;
    expect(prefix).toMatchObject({ body: 'first part. ', streaming: true });
    await append(sent.id, 'second part.');
    await waitUntil('the delta', () => deltas.some((d) => d.messageId === sent.id));
    const next = deltas.find((d) => d.messageId === sent.id)!;
    expect(next.offset).toBe([...prefix.body].length);
    expect(prefix.body + next.text).toBe('first part. second part.');
    await end(sent.id);
  });

  it('idle: no append for STREAM_IDLE_SECONDS ends it interrupted with the text so far, once', async () => {
    const reader = await open(bob);
    const updates = record<Msg>(reader, 'message:updated');
    const sent = await start();
    await append(sent.id, 'unfinished thought');
    await waitUntil('the idle end', () => updates.some((m) => m.id === sent.id), (IDLE_SECONDS + 5) * 1000);
    expect(updates.find((m) => m.id === sent.id)).toMatchObject({ body: 'unfinished thought', streaming: false, streamEnd: 'interrupted', editedAt: null });
    expect(await catchUp(sent.id)).toMatchObject({ body: 'unfinished thought', streamEnd: 'interrupted' });
    expect((await append(sent.id, 'x')).status).toBe(409);
    await roundTrip(reader);
    expect(updates.filter((m) => m.id === sent.id)).toHaveLength(1);
  });

  it('a WebSocket-started message whose writer socket is killed mid-stream ends interrupted, keeping its text', async () => {
    const writer = await open(alice);
    const reader = await open(bob);
    const updated = waitFor<Msg>(reader, 'message:updated', (m) => m.streamEnd === 'interrupted' && m.body === 'cut off here', (IDLE_SECONDS + 8) * 1000);
    const sent = await emitWithAck<{ messageId: string }>(writer, 'message:send', { roomId: room.id, body: '', streaming: true });
    await emitWithAck(writer, 'message:append', { roomId: room.id, messageId: sent.messageId, text: 'cut off here' });
    writer.disconnect();
    expect((await updated).id).toBe(sent.messageId);
  });

  it('MCP: send_message streaming, append_message {length}, end_message {message}; refusals are isError with the code', async () => {
    const mcp = await connectMcp(server.url, alice.jwt);
    const other = await connectMcp(server.url, bob.jwt);
    try {
      const sent = await callTool(mcp, 'send_message', { room: room.slug, body: '', streaming: true });
      const id = sent.data.message.id as string;
      expect(sent.data.message).toMatchObject({ streaming: true, streamEnd: null });
      expect((await callTool(mcp, 'append_message', { room: room.slug, messageId: id, text: 'via mcp' })).data).toEqual({ length: 7 });
      expect((await callTool(other, 'append_message', { room: room.slug, messageId: id, text: 'x' })).text).toMatch(/^FORBIDDEN/);
      expect((await callTool(mcp, 'append_message', { room: room.slug, messageId: id, text: '' })).text).toMatch(/^VALIDATION_ERROR: .*text/);
      expect((await callTool(mcp, 'append_message', { room: room.slug, messageId: UNKNOWN_ID, text: 'x' })).text).toMatch(/^NOT_FOUND/);
      const ended = await callTool(mcp, 'end_message', { room: room.slug, messageId: id, data: { k: 1 } });
      expect(ended.data.message).toMatchObject({ id, body: 'via mcp', data: { k: 1 }, streaming: false, streamEnd: 'complete' });
      expect((await callTool(mcp, 'end_message', { room: room.slug, messageId: id })).text).toMatch(/^CONFLICT/);
    } finally {
      await mcp.close();
      await other.close();
    }
  });
});
