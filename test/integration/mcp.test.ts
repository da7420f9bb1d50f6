import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/mcp.md: the service as MCP tools, through the SDK's own client.

const TOOL_NAMES = [
  'whoami', 'list_rooms', 'read_messages', 'send_message', 'fetch_inbox', 'mark_read', 'set_activity', 'search_messages',
  'list_agents', 'read_feed', 'create_post', 'reply_to_post', 'react_to_post', 'read_thread',
  'read_replies', 'edit_message', 'delete_message', 'send_direct_message', 'upload_file', 'read_file', 'read_audit',
  'create_task', 'get_task', 'list_tasks', 'update_task', 'request_approval', 'claim_task', 'heartbeat_task', 'acquire_lease', 'renew_lease', 'release_lease', 'list_leases',
  'append_message', 'end_message',
  'ack_message',
];

describe('/mcp: the tools (open mode)', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let outsider: TestAgent;
  let room: TestRoom;
  let other: TestRoom;
  let mcp: Client;
  const clients: Client[] = [];

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    [alice, bob, outsider] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
    room = await newRoom(t.api, admin, [alice, bob]);
    other = await newRoom(t.api, admin, [bob]);
    mcp = await connectMcp(t.server.url, alice.jwt);
    clients.push(mcp);
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
  });

  it('lists the tools, each described for a model with an object input schema', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const tool of tools) {
      expect(tool.description!.length, tool.name).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe('object');
      for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect((schema as { description?: string }).description, `${tool.name}.${name}`).toBeTruthy();
      }
    }
    const send = tools.find((tool) => tool.name === 'send_message')!;
    expect(send.inputSchema.required).toEqual(['room', 'body']);
  });

  it('whoami: the agent of the credential, with a JWT and with an API token', async () => {
    const byJwt = await callTool(mcp, 'whoami');
    expect(byJwt).toMatchObject({ isError: false, data: { agentId: alice.id, name: alice.name, displayName: `Test ${alice.name}`, role: 'agent' } });
    expect(byJwt.text).toContain(alice.name);
    const byToken = await connectMcp(t.server.url, admin.apiToken);
    clients.push(byToken);
    expect((await callTool(byToken, 'whoami')).data).toEqual({ agentId: admin.id, name: admin.name, displayName: `Test ${admin.name}`, role: 'admin', description: '', skills: [] });
  });

  it('send_message by slug and by id; read_messages newest first with senderName, afterSeq oldest first', async () => {
    const first = await callTool(mcp, 'send_message', { room: room.slug, body: 'hello from alice', clientMsgId: 'm-1' });
    expect(first.isError).toBe(false);
    expect(first.data.message).toMatchObject({ roomId: room.id, senderId: alice.id, body: 'hello from alice', seq: 1, clientMsgId: 'm-1' });
    // A retry with the same clientMsgId returns the original.
    const retry = await callTool(mcp, 'send_message', { room: room.id, body: 'hello from alice', clientMsgId: 'm-1' });
    expect(retry.data.message.id).toBe(first.data.message.id);
    await sendMessage(t.api, bob, room.id, 'hello from bob');

    const latest = await callTool(mcp, 'read_messages', { room: room.slug, limit: 1 });
    expect(latest.data).toMatchObject({ hasMore: true, messages: [{ body: 'hello from bob', senderId: bob.id, senderName: bob.name, seq: 2 }] });
    expect(latest.text).toContain(bob.name);
    expect(latest.text).toContain('hello from bob');
    const older = await callTool(mcp, 'read_messages', { room: room.slug, before: latest.data.nextCursor });
    expect(older.data.messages.map((m: { body: string }) => m.body)).toEqual(['hello from alice']);
    expect(older.data.messages[0].senderName).toBe(alice.name);

    const forward = await callTool(mcp, 'read_messages', { room: room.id, afterSeq: 0 });
    expect(forward.data).toMatchObject({ hasMore: false, lastSeq: 2 });
    expect(forward.data.messages.map((m: { seq: number }) => m.seq)).toEqual([1, 2]);
  });

  it('read_messages and send_message failures start with the code', async () => {
    const both = await callTool(mcp, 'read_messages', { room: room.id, afterSeq: 0, before: '0190a0a0-0000-7000-8000-000000000000' });
    expect(both.isError).toBe(true);
    expect(both.text).toMatch(/^VALIDATION_ERROR: /);
    const unknown = await callTool(mcp, 'read_messages', { room: 'no-such-room' });
    expect(unknown).toMatchObject({ isError: true, data: { error: { code: 'ROOM_NOT_FOUND' } } });
    expect(unknown.text).toMatch(/^ROOM_NOT_FOUND: /);
    const notMember = await callTool(mcp, 'send_message', { room: other.slug, body: 'let me in' });
    expect(notMember.text).toMatch(/^FORBIDDEN: /);
    const empty = await callTool(mcp, 'send_message', { room: room.slug, body: '' });
    expect(empty.text).toMatch(/^VALIDATION_ERROR: .*body/);
    const badRoom = await callTool(mcp, 'send_message', { room: 'Not A Slug!', body: 'x' });
    expect(badRoom.text).toMatch(/^VALIDATION_ERROR: .*room must be a room id/);
  });

  it('malformed arguments: VALIDATION_ERROR naming the argument; an unknown tool: JSON-RPC -32602', async () => {
    const wrongType = await callTool(mcp, 'read_messages', { room: room.id, limit: 'ten' });
    expect(wrongType.isError).toBe(true);
    expect(wrongType.text).toMatch(/^VALIDATION_ERROR: .*limit must be a whole number/);
    const missing = await callTool(mcp, 'send_message', { room: room.id });
    expect(missing.text).toMatch(/^VALIDATION_ERROR: .*body is required/);
    const extra = await callTool(mcp, 'whoami', { sudo: true });
    expect(extra.text).toMatch(/^VALIDATION_ERROR: .*sudo is not an allowed field/);
    await expect(mcp.callTool({ name: 'drop_tables', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  it('list_rooms: member rooms only, with lastSeq, readSeq and unreadCount', async () => {
    const listed = await callTool(mcp, 'list_rooms');
    expect(listed.data.rooms).toEqual([{ id: room.id, slug: room.slug, name: room.name, kind: 'group', lastSeq: 2, readSeq: 0, unreadCount: 1, attentionCount: 0 }]);
    expect(listed.text).toContain(room.slug);
  });

  it('fetch_inbox then mark_read: the agent loop', async () => {
    const inbox = await callTool(mcp, 'fetch_inbox', {});
    expect(inbox.data).toMatchObject({ unreadTotal: 1, hasMore: false, messages: [{ body: 'hello from bob', senderName: bob.name, seq: 2 }] });
    expect(inbox.text).toContain('hello from bob');
    const marked = await callTool(mcp, 'mark_read', { room: room.slug, seq: 2 });
    expect(marked.data).toEqual({ roomId: room.id, readSeq: 2, unreadCount: 0 });
    expect((await callTool(mcp, 'fetch_inbox', {})).data).toEqual({ messages: [], unreadTotal: 0, attentionTotal: 0, hasMore: false });

    const tooHigh = await callTool(mcp, 'mark_read', { room: room.id, seq: 99 });
    expect(tooHigh.text).toMatch(/^VALIDATION_ERROR: .*seq/);
    const notMember = await callTool(mcp, 'mark_read', { room: other.id, seq: 0 });
    expect(notMember.text).toMatch(/^FORBIDDEN: /);
    const tooLong = await callTool(mcp, 'fetch_inbox', { wait_seconds: 31 });
    expect(tooLong.text).toMatch(/^VALIDATION_ERROR: .*wait_seconds/);
  });

  it('fetch_inbox with wait_seconds is held until a message arrives, then answers with it', async () => {
    const started = Date.now();
    const waiting = callTool(mcp, 'fetch_inbox', { wait_seconds: 20 });
    // The waiter registers, then bob writes.
    await waitUntil('the fetch_inbox call held', () => t.server.app.ctx.inboxWaiters.size === 1);
    const sent = await sendMessage(t.api, bob, room.id, 'wake up');
    const woken = await waiting;
    expect(woken.data.messages).toMatchObject([{ id: sent.id, body: 'wake up', senderName: bob.name }]);
    expect(Date.now() - started).toBeLessThan(15_000);
    await callTool(mcp, 'mark_read', { room: room.id, seq: sent.seq });
  });

  it('a waiting fetch_inbox whose client goes away withdraws its waiter', async () => {
    const waiters = t.server.app.ctx.inboxWaiters;
    const before = waiters.size;
    const gone = new AbortController();
    const request = fetch(`${t.server.url}/mcp`, {
      method: 'POST',
      signal: gone.signal,
      headers: { authorization: `Bearer ${alice.jwt}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'fetch_inbox', arguments: { wait_seconds: 25 } } }),
    }).catch((err: unknown) => err);
    await waitUntil('the call waits', () => waiters.size === before + 1);
    gone.abort();
    await request;
    await waitUntil('the waiter is withdrawn', () => waiters.size === before);
  });

  it('search_messages: matches with senderName, paging with before; a query without a word is VALIDATION_ERROR', async () => {
    await sendMessage(t.api, bob, room.id, 'deploy the café build');
    await sendMessage(t.api, bob, room.id, 'deploy again');
    const page = await callTool(mcp, 'search_messages', { query: 'deploy', room: room.slug, limit: 1 });
    expect(page.data).toMatchObject({ hasMore: true, results: [{ body: 'deploy again', senderName: bob.name }] });
    const next = await callTool(mcp, 'search_messages', { query: 'cafe', before: page.data.nextCursor });
    expect(next.data.results.map((m: { body: string }) => m.body)).toEqual(['deploy the café build']);
    const noWord = await callTool(mcp, 'search_messages', { query: '!!!' });
    expect(noWord.text).toMatch(/^VALIDATION_ERROR: .*query/);
  });

  it('list_agents: the directory, filtered by role; an unknown role is VALIDATION_ERROR', async () => {
    const all = await callTool(mcp, 'list_agents');
    const names = all.data.agents.map((a: { name: string }) => a.name);
    expect(names).toEqual(expect.arrayContaining([admin.name, alice.name, bob.name, outsider.name]));
    expect(all.data.agents[0]).toEqual({ id: expect.any(String), name: expect.any(String), displayName: expect.any(String), role: expect.any(String), online: expect.any(Boolean), description: expect.any(String), skills: expect.any(Array) });
    const admins = await callTool(mcp, 'list_agents', { role: 'admin' });
    expect(admins.data.agents.every((a: { role: string }) => a.role === 'admin')).toBe(true);
    expect((await callTool(mcp, 'list_agents', { role: 'boss' })).text).toMatch(/^VALIDATION_ERROR: .*role/);
  });

  it('the feed: create_post, read_feed, reply_to_post, react_to_post, read_thread, and their failures', async () => {
    const posted = await callTool(mcp, 'create_post', { body: 'status: all green' });
    expect(posted.data.post).toMatchObject({ authorAgentId: alice.id, body: 'status: all green', parentPostId: null });
    const postId = posted.data.post.id as string;

    const feed = await callTool(mcp, 'read_feed', { channel: 'general', limit: 1 });
    expect(feed.data.posts).toMatchObject([{ id: postId, authorName: alice.name }]);
    expect(feed.text).toContain('status: all green');
    expect((await callTool(mcp, 'read_feed', {})).data.posts[0].id).toBe(postId);

    const replied = await callTool(mcp, 'reply_to_post', { postId, body: 'thanks' });
    expect(replied.data.post).toMatchObject({ parentPostId: postId, body: 'thanks' });
    expect((await callTool(mcp, 'react_to_post', { postId, emoji: '👍' })).data).toEqual({ action: 'added', emoji: '👍' });
    expect((await callTool(mcp, 'react_to_post', { postId, emoji: '👍' })).data).toEqual({ action: 'removed', emoji: '👍' });
    const thread = await callTool(mcp, 'read_thread', { postId: replied.data.post.id });
    expect(thread.data.parent).toMatchObject({ id: postId, replyCount: 1 });
    expect(thread.data.replies).toMatchObject([{ body: 'thanks', authorName: alice.name }]);

    const missing = '0190a0a0-0000-7000-8000-000000000000';
    expect((await callTool(mcp, 'read_feed', { channel: 'no-such-channel' })).text).toMatch(/^NOT_FOUND: Channel/);
    expect((await callTool(mcp, 'create_post', { channel: 'general', body: '' })).text).toMatch(/^VALIDATION_ERROR: .*body/);
    expect((await callTool(mcp, 'reply_to_post', { postId: missing, body: 'x' })).text).toMatch(/^NOT_FOUND: Post/);
    expect((await callTool(mcp, 'react_to_post', { postId, emoji: '🔥' })).text).toMatch(/^VALIDATION_ERROR: .*emoji/);
    expect((await callTool(mcp, 'read_thread', { postId: 'nope' })).text).toMatch(/^VALIDATION_ERROR: .*postId/);
    expect((await callTool(mcp, 'read_thread', { postId: missing })).text).toMatch(/^NOT_FOUND: /);
  });
});
