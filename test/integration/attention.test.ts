import { beforeAll, describe, expect, it } from 'vitest';
import { AmsClient } from '@agent-messaging/client';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { connectReady, emitWithAck } from '../helpers/ws.js';
import { waitToProveAbsence } from '../helpers/wait.js';

// docs/protocol.md, Attention: who a message is for, counted per room and filtered in the inbox.

interface InboxItem { id: string; body: string; attention: boolean }

describe('attention', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    admin = await newAdmin(api);
    [alice, bob, carol] = [await newAgent(api), await newAgent(api), await newAgent(api)];
    room = await newRoom(api, admin, [alice, bob, carol]);
  });

  const send = async (agent: TestAgent, body: Record<string, unknown>, roomId = room.id): Promise<{ id: string; seq: number }> => {
    const res = await api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  const inbox = (agent: TestAgent, query = '') => api.get(`/api/v1/inbox${query}`, { jwt: agent.jwt });
  const listed = async (agent: TestAgent, roomId = room.id) =>
    ((await api.get('/api/v1/rooms', { jwt: agent.jwt })).body.rooms as { id: string; unreadCount?: number; attentionCount?: number }[]).find((r) => r.id === roomId);
  const markAllRead = async (agent: TestAgent, roomId = room.id) => {
    const { lastSeq } = (await listed(agent, roomId)) as unknown as { lastSeq: number };
    expect((await api.post(`/api/v1/rooms/${roomId}/read`, { seq: lastSeq }, { jwt: agent.jwt })).status).toBe(200);
  };

  it('mentions and replies to one\'s messages are for one\'s attention; one\'s own never; counts follow readSeq', async () => {
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    const plain = await send(alice, { body: 'plain' });
    const mention = await send(alice, { body: 'hey bob', mentions: [bob.id, alice.id] });
    const fromBob = await send(bob, { body: 'bob speaks' });
    const reply = await send(carol, { body: 'answer to bob', replyTo: fromBob.id });
    const replyToPlain = await send(bob, { body: 'answer to alice', replyTo: plain.id });

    expect(await listed(bob)).toMatchObject({ unreadCount: 3, attentionCount: 2 });
    expect(await listed(alice)).toMatchObject({ unreadCount: 3, attentionCount: 1 });
    expect(await listed(carol)).toMatchObject({ unreadCount: 4, attentionCount: 0 });

    const all = await inbox(bob);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ unreadTotal: 3, attentionTotal: 2, hasMore: false });
    expect((all.body.messages as InboxItem[]).map((m) => [m.id, m.attention])).toEqual([[plain.id, false], [mention.id, true], [reply.id, true]]);
    const only = await inbox(bob, '?filter=attention');
    expect(only.body).toMatchObject({ unreadTotal: 3, attentionTotal: 2, hasMore: false });
    expect((only.body.messages as InboxItem[]).map((m) => m.id)).toEqual([mention.id, reply.id]);
    const firstOnly = await inbox(bob, '?filter=attention&limit=1');
    expect(firstOnly.body).toMatchObject({ hasMore: true, attentionTotal: 2 });
    expect((await inbox(alice, '?filter=attention')).body.messages.map((m: InboxItem) => m.id)).toEqual([replyToPlain.id]);

    // Read up to the mention: only the reply is left for bob's attention.
    expect((await api.post(`/api/v1/rooms/${room.id}/read`, { seq: mention.seq }, { jwt: bob.jwt })).status).toBe(200);
    expect(await listed(bob)).toMatchObject({ unreadCount: 1, attentionCount: 1 });

    // room:list items carry attentionCount too.
    const { socket } = await connectReady(server.url, bob.jwt);
    try {
      const ack = await emitWithAck<{ rooms: { id: string; attentionCount: number }[] }>(socket, 'room:list', {});
      expect(ack.rooms.find((r) => r.id === room.id)).toMatchObject({ unreadCount: 1, attentionCount: 1 });
    } finally {
      socket.disconnect();
    }
  });

  it('a filter other than all or attention is 400 details.filter', async () => {
    const res = await inbox(bob, '?filter=mine');
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ filter: expect.any(String) });
  });

  it('filter=attention with wait: other messages do not wake it, a mention does', async () => {
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    const held = inbox(carol, '?filter=attention&wait=10');
    let answered = false;
    void held.then(() => (answered = true));
    await waitToProveAbsence(200);
    await send(alice, { body: 'not for carol' });
    await waitToProveAbsence(300);
    expect(answered).toBe(false);
    const mention = await send(bob, { body: 'carol, look', mentions: [carol.id] });
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ unreadTotal: 2, attentionTotal: 1 });
    expect(res.body.messages.map((m: InboxItem) => [m.id, m.attention])).toEqual([[mention.id, true]]);
  });

  it('filter=attention with wait answers at the wait\'s end with the unread total when nothing is for the caller', async () => {
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    await send(alice, { body: 'nothing for bob' });
    const res = await inbox(bob, '?filter=attention&wait=0.5');
    expect(res.body).toEqual({ messages: [], hasMore: false, unreadTotal: 1, attentionTotal: 0 });
  });
  it('MCP: fetch_inbox {filter} with attentionTotal and attention per item; list_rooms with attentionCount', async () => {
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    const plain = await send(alice, { body: 'plain for all' });
    const mention = await send(alice, { body: 'bob, over MCP', mentions: [bob.id] });
    const mcp = await connectMcp(server.url, bob.jwt);
    try {
      const all = await callTool(mcp, 'fetch_inbox');
      expect(all).toMatchObject({ isError: false, data: { unreadTotal: 2, attentionTotal: 1, hasMore: false } });
      expect(all.data.messages.map((m: InboxItem) => [m.id, m.attention])).toEqual([[plain.id, false], [mention.id, true]]);
      expect(all.text).toContain('1 for your attention');
      const only = await callTool(mcp, 'fetch_inbox', { filter: 'attention', limit: 5 });
      expect(only.data).toMatchObject({ unreadTotal: 2, attentionTotal: 1, hasMore: false });
      expect(only.data.messages.map((m: InboxItem) => m.id)).toEqual([mention.id]);
      expect(only.text).toContain('(for your attention)');
      expect(only.text).not.toContain('plain for all');
      const bad = await callTool(mcp, 'fetch_inbox', { filter: 'mine' });
      expect(bad.isError).toBe(true);
      expect(bad.text).toMatch(/^VALIDATION_ERROR/);
      const rooms = await callTool(mcp, 'list_rooms');
      expect(rooms.data.rooms.find((r: { id: string }) => r.id === room.id)).toMatchObject({ unreadCount: 2, attentionCount: 1 });
    } finally {
      await mcp.close();
    }
  });
  it('the client library: inbox({filter}) with attentionTotal and attention; rooms() with attentionCount; ams inbox --attention', { timeout: 120_000 }, async () => {
    await ensureBuilt();
    for (const agent of [alice, bob, carol]) await markAllRead(agent);
    const plain = await send(alice, { body: 'plain for the client' });
    const mention = await send(alice, { body: 'bob, from the client test', mentions: [bob.id] });
    const client = new AmsClient({ url: server.url, apiToken: bob.apiToken });
    try {
      const all = await client.inbox();
      expect(all).toMatchObject({ unreadTotal: 2, attentionTotal: 1, hasMore: false });
      expect(all.messages.map((m) => [m.id, m.attention])).toEqual([[plain.id, false], [mention.id, true]]);
      const only = await client.inbox({ filter: 'attention', wait: 1 });
      expect(only.messages.map((m) => m.id)).toEqual([mention.id]);
      expect((await client.rooms()).find((r) => r.id === room.id)).toMatchObject({ unreadCount: 2, attentionCount: 1 });
    } finally {
      await client.close();
    }
    const cli = await runAms({ AMS_URL: server.url, AMS_API_TOKEN: bob.apiToken }, 'inbox', '--attention');
    expect(cli).toMatchObject({ code: 0, stderr: '' });
    expect(cli.stdout).toContain('@ ');
    expect(cli.stdout).toContain('bob, from the client test');
    expect(cli.stdout).not.toContain('plain for the client');
    const json = await runAms({ AMS_URL: server.url, AMS_API_TOKEN: bob.apiToken }, 'inbox', '--attention', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ unreadTotal: 2, attentionTotal: 1, messages: [{ id: mention.id, attention: true }] });
  });
});
