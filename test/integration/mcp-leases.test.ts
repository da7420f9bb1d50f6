import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/leases.md, the MCP tools: the same service as /api/v1/rooms/:id/leases.

describe('MCP lease tools', () => {
  const t = useTestServer();
  const clients: Client[] = [];
  afterAll(async () => { for (const c of clients) await c.close(); });
  const mcpOf = async (jwt: string): Promise<Client> => {
    const client = await connectMcp(t.server.url, jwt);
    clients.push(client);
    return client;
  };

  it('acquire_lease, list_leases, renew_lease, release_lease; conflicts, bad arguments and unknown rooms', async () => {
    const admin = await newAdmin(t.api);
    const [alice, bob] = [await newAgent(t.api), await newAgent(t.api)];
    const room = await newRoom(t.api, admin, [alice, bob]);
    const [a, b] = [await mcpOf(alice.jwt), await mcpOf(bob.jwt)];
    const got = await callTool(a, 'acquire_lease', { room: room.slug, resource: 'src/', reason: 'refactor', ttlSeconds: 120 });
    expect(got.isError).toBe(false);
    expect(got.data.lease).toMatchObject({ resource: 'src/', holderId: alice.id, exclusive: true, fence: 1, reason: 'refactor' });
    const refused = await callTool(b, 'acquire_lease', { room: room.id, resource: 'src/app.ts' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^CONFLICT/);
    expect(refused.text).toContain(alice.id);
    expect((await callTool(b, 'acquire_lease', { room: room.id, resource: 'a/../b' })).text).toMatch(/^VALIDATION_ERROR/);
    expect((await callTool(b, 'acquire_lease', { room: room.id, resource: 'r', ttlSeconds: 1 })).text).toMatch(/^VALIDATION_ERROR/);
    // An unknown room is ROOM_NOT_FOUND, as in every tool naming a room (mcp-not-found.test.ts).
    expect((await callTool(b, 'acquire_lease', { room: 'no-such-room', resource: 'r' })).text).toMatch(/^ROOM_NOT_FOUND/);
    const listed = await callTool(b, 'list_leases', { room: room.slug, resource: 'src/app.ts' });
    expect(listed.data.leases.map((l: { id: string }) => l.id)).toEqual([got.data.lease.id]);
    expect((await callTool(a, 'renew_lease', { room: room.id, leaseId: got.data.lease.id, ttlSeconds: 600 })).data.lease.expiresAt > got.data.lease.expiresAt).toBe(true);
    expect((await callTool(b, 'release_lease', { room: room.id, leaseId: got.data.lease.id })).text).toMatch(/^FORBIDDEN/);
    expect((await callTool(a, 'release_lease', { room: room.id, leaseId: got.data.lease.id })).isError).toBe(false);
    expect((await callTool(a, 'renew_lease', { room: room.id, leaseId: got.data.lease.id })).text).toMatch(/^NOT_FOUND/);
    expect((await callTool(b, 'acquire_lease', { room: room.id, resource: 'src/app.ts' })).isError).toBe(false);
  });
});
