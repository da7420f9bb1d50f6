import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, scopedSession, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/mcp.md: the caller's rooms and inbox as MCP resources, and rooms named by slug in tool texts.

describe('/mcp resources and texts by slug', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  let other: TestRoom;
  let mcp: Client;
  const clients: Client[] = [];

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    [alice, bob] = [await newAgent(t.api), await newAgent(t.api)];
    room = await newRoom(t.api, admin, [alice, bob]);
    other = await newRoom(t.api, admin, [bob]);
    mcp = await connectMcp(t.server.url, alice.jwt);
    clients.push(mcp);
    await sendMessage(t.api, bob, room.id, 'first from bob');
    await sendMessage(t.api, bob, room.id, 'second from bob');
    await sendMessage(t.api, bob, other.id, 'not for alice');
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
  });

  const failure = async (uri: string, client = mcp): Promise<McpError> => {
    const err: unknown = await client.readResource({ uri }).then(() => null, (e: unknown) => e);
    expect(err, uri).toBeInstanceOf(McpError);
    return err as McpError;
  };

  it('the server announces resources; resources/list gives the inbox and the caller\'s member rooms only', async () => {
    expect(mcp.getServerCapabilities()?.resources).toBeDefined();
    const { resources } = await mcp.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['ams://inbox', `ams://rooms/${room.slug}`]);
    const listed = resources[1]!;
    expect(listed).toMatchObject({ name: room.slug, title: room.name, mimeType: 'text/plain' });
    expect(listed.description).toContain('2 unread');
    const { resourceTemplates } = await mcp.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate)).toEqual(['ams://rooms/{slug}']);
  });

  it('reading a room gives its recent messages as text, oldest first, named by slug', async () => {
    const { contents } = await mcp.readResource({ uri: `ams://rooms/${room.slug}` });
    expect(contents).toHaveLength(1);
    const { uri, mimeType, text } = contents[0] as { uri: string; mimeType: string; text: string };
    expect({ uri, mimeType }).toEqual({ uri: `ams://rooms/${room.slug}`, mimeType: 'text/plain' });
    expect(text.indexOf('first from bob')).toBeGreaterThan(-1);
    expect(text.indexOf('first from bob')).toBeLessThan(text.indexOf('second from bob'));
    expect(text).toContain(`${bob.name} in room ${room.slug} (seq 1`);
    expect(text).not.toContain('not for alice');
  });

  it('reading the inbox gives the unread messages across rooms; reading marks nothing read', async () => {
    const read = async (): Promise<string> => ((await mcp.readResource({ uri: 'ams://inbox' })).contents[0] as { text: string }).text;
    const text = await read();
    expect(text).toContain('first from bob');
    expect(text).toContain('second from bob');
    expect(text).toContain(`in room ${room.slug}`);
    expect(text).toContain('2 unread in all');
    expect(await read()).toContain('2 unread in all');
  });

  it('an unknown room or URI is "Resource not found" (-32002); a malformed slug is -32602', async () => {
    expect((await failure('ams://rooms/no-such-room')).code).toBe(-32002);
    expect((await failure('ams://elsewhere')).code).toBe(-32002);
    expect((await failure('ams://rooms/%E0%A4%A')).code).toBe(-32002);
    const malformed = await failure('ams://rooms/Not A Slug');
    expect(malformed.code).toBe(-32602);
    expect(malformed.message).toContain('VALIDATION_ERROR');
  });

  it('a scoped token\'s limits hold: only its rooms are listed and read, its actions are needed', async () => {
    const second = await newRoom(t.api, admin, [alice, bob]);
    await sendMessage(t.api, bob, second.id, 'in the second room');
    const limited = await connectMcp(t.server.url, await scopedSession(t.api, alice, { rooms: [second.id] }, admin.jwt));
    clients.push(limited);
    expect((await limited.listResources()).resources.map((r) => r.uri)).toEqual(['ams://inbox', `ams://rooms/${second.slug}`]);
    const outside = await failure(`ams://rooms/${room.slug}`, limited);
    expect(outside.code).toBe(-32600);
    expect(outside.message).toContain('FORBIDDEN');
    const inbox = ((await limited.readResource({ uri: 'ams://inbox' })).contents[0] as { text: string }).text;
    expect(inbox).toContain('in the second room');
    expect(inbox).not.toContain('from bob');

    const listOnly = await connectMcp(t.server.url, await scopedSession(t.api, alice, { actions: ['rooms:read'] }, admin.jwt));
    clients.push(listOnly);
    expect((await listOnly.listResources()).resources.length).toBeGreaterThan(1);
    expect((await failure(`ams://rooms/${second.slug}`, listOnly)).message).toContain('FORBIDDEN');
  });

  it('tool texts name rooms by slug, not by id', async () => {
    const sent = await callTool(mcp, 'send_message', { room: room.slug, body: 'from alice' });
    expect(sent.text).toContain(`in room ${room.slug}`);
    const read = await callTool(mcp, 'read_messages', { room: room.id, limit: 5 });
    const inbox = await callTool(mcp, 'fetch_inbox');
    const found = await callTool(mcp, 'search_messages', { query: 'bob' });
    const marked = await callTool(mcp, 'mark_read', { room: room.id, seq: 3 });
    expect(marked.text).toBe(`Room ${room.slug}: read up to seq 3, 0 unread.`);
    for (const outcome of [sent, read, inbox, found]) {
      expect(outcome.isError).toBe(false);
      expect(outcome.text).not.toContain(room.id);
    }
    expect(read.text).toContain(`in room ${room.slug}`);
    expect(inbox.text).toContain(`in room ${room.slug}`);
    expect(found.text).toContain(`in room ${room.slug}`);
  });
});
