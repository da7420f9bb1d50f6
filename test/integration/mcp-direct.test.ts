import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { newAgent, scopedSession } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/mcp.md, send_direct_message: the direct room of the caller and `to` (an id or a name), then
// the message in it, through the same services as POST /api/v1/direct-rooms and send_message.

describe('MCP send_direct_message', () => {
  const t = useTestServer();
  const clients: Client[] = [];
  afterAll(async () => { for (const c of clients) await c.close(); });
  const mcpOf = async (jwt: string): Promise<Client> => {
    const client = await connectMcp(t.server.url, jwt);
    clients.push(client);
    return client;
  };

  it('opens the direct room by name or id, sends, retries safely with clientMsgId; the other side reads it', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const mcp = await mcpOf(alice.jwt);
    const first = await callTool(mcp, 'send_direct_message', { to: bob.name, body: 'hi bob', clientMsgId: 'd-1' });
    expect(first.isError).toBe(false);
    const { message, room } = first.data;
    expect(room).toMatchObject({ slug: `dm-${room.id}`, kind: 'direct', name: [alice.name, bob.name].sort().join(', '), createdBy: alice.id, lastSeq: 1 });
    expect(message).toMatchObject({ roomId: room.id, senderId: alice.id, body: 'hi bob', seq: 1, clientMsgId: 'd-1' });
    expect(first.text).toContain(room.slug);
    const retry = await callTool(mcp, 'send_direct_message', { to: bob.id.toUpperCase(), body: 'hi bob', clientMsgId: 'd-1' });
    expect(retry.data.message.id).toBe(message.id);
    expect(retry.data.room.id).toBe(room.id);
    expect(retry.text).toContain('Already sent');
    // Bob's answer by id lands in the same room; REST agrees.
    const answer = await callTool(await mcpOf(bob.jwt), 'send_direct_message', { to: alice.id, body: 'hi alice' });
    expect(answer.data).toMatchObject({ room: { id: room.id, lastSeq: 2 }, message: { seq: 2 } });
    const history = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
    expect((history.body.messages as { body: string }[]).map((m) => m.body)).toEqual(['hi alice', 'hi bob']);
  });

  it('errors are isError results starting with the code, naming `to` or the agent not found', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const mcp = await mcpOf(alice.jwt);
    const self = await callTool(mcp, 'send_direct_message', { to: alice.name, body: 'me' });
    expect(self).toMatchObject({ isError: true, data: { error: { code: 'VALIDATION_ERROR', details: { to: expect.any(String) } } } });
    expect(self.text).toMatch(/^VALIDATION_ERROR: /);
    // An agent that does not exist, by name or by id: NOT_FOUND naming it.
    expect((await callTool(mcp, 'send_direct_message', { to: 'no-such-agent-xyz', body: 'x' })).text).toBe('NOT_FOUND: Agent not found: no-such-agent-xyz');
    expect((await callTool(mcp, 'send_direct_message', { to: '01900000-0000-7000-8000-000000000000', body: 'x' })).text).toBe('NOT_FOUND: Agent not found: 01900000-0000-7000-8000-000000000000');
    expect((await callTool(mcp, 'send_direct_message', { to: bob.name, body: '' })).text).toMatch(/^VALIDATION_ERROR: /);
    const carol = await newAgent(t.api);
    expect((await t.api.post(`/api/v1/agents/${carol.id}/disable`)).status).toBe(200);
    expect((await callTool(mcp, 'send_direct_message', { to: carol.name, body: 'x' })).text).toMatch(/^FORBIDDEN: /);
    const readOnly = await mcpOf(await scopedSession(t.api, alice, { actions: ['messages:read', 'rooms:read'] }));
    expect((await callTool(readOnly, 'send_direct_message', { to: bob.name, body: 'x' })).text).toMatch(/^FORBIDDEN: /);
    // No failure made a room.
    const rooms = await t.api.get('/api/v1/rooms', { jwt: alice.jwt });
    expect((rooms.body.rooms as { kind: string }[]).filter((r) => r.kind === 'direct')).toEqual([]);
  });
});
