import { beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, newAgent, type TestAgent, uniqueName } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

describe('AUTHZ_MODE=strict', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let aliceRoom: { id: string; slug: string };
  let bobRoom: { id: string; slug: string };

  beforeAll(async () => {
    // The first admin comes from outside the API, as `ams admin create` makes it.
    admin = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    alice = await newAgent(t.api, { asJwt: admin.jwt });
    bob = await newAgent(t.api, { asJwt: admin.jwt });
    const make = async (member: TestAgent) => {
      const res = await t.api.post('/rooms', { slug: uniqueName('room'), name: 'R', members: [member.id] }, { jwt: admin.jwt });
      expect(res.status).toBe(201);
      return res.body as { id: string; slug: string };
    };
    aliceRoom = await make(alice);
    bobRoom = await make(bob);
  });

  /** 401 without a JWT, 403 with a non-admin JWT: the shape of every admin-only endpoint. */
  async function expectAdminOnly(method: string, path: string, body?: unknown): Promise<void> {
    const anonymous = await t.api.request(method, path, { body });
    expect(anonymous.status, `${method} ${path} anonymous`).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.any(String) });
    const agent = await t.api.request(method, path, { body, jwt: alice.jwt });
    expect(agent.status, `${method} ${path} as agent`).toBe(403);
    expect(agent.body).toEqual({ error: expect.any(String) });
  }

  it('agents: POST and GET /api/v1/agents need an admin JWT', async () => {
    await expectAdminOnly('POST', '/api/v1/agents', { name: uniqueName('x'), displayName: 'x', role: 'agent' });
    await expectAdminOnly('GET', '/api/v1/agents');
    const created = await t.api.post('/api/v1/agents', { name: uniqueName('x'), displayName: 'x', role: 'agent' }, { jwt: admin.jwt });
    expect(created.status).toBe(201);
    const list = await t.api.get('/api/v1/agents', { jwt: admin.jwt });
    expect(list.status).toBe(200);
    expect(list.body.map((a: { id: string }) => a.id)).toContain(created.body.id);
  });

  it('authorisation comes before validation: an invalid body from a non-admin is still 403', async () => {
    expect((await t.api.post('/api/v1/agents', { name: 'BAD' }, { jwt: alice.jwt })).status).toBe(403);
    expect((await t.api.post('/api/v1/agents', { name: 'BAD' })).status).toBe(401);
  });

  it('tokens: issue and revoke need an admin JWT; the session exchange needs none', async () => {
    await expectAdminOnly('POST', `/api/v1/agents/${alice.id}/tokens`, {});
    const issued = await t.api.post(`/api/v1/agents/${alice.id}/tokens`, {}, { jwt: admin.jwt });
    expect(issued.status).toBe(201);
    expect((await t.api.post('/api/v1/sessions', { apiToken: issued.body.token })).status).toBe(201);
    await expectAdminOnly('DELETE', `/api/v1/tokens/${issued.body.prefix}`);
    expect((await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`, { jwt: admin.jwt })).status).toBe(204);
    expect((await t.api.post('/api/v1/sessions', { apiToken: issued.body.token })).status).toBe(401);
  });

  it('POST /rooms: X-Agent-Id alone is 401 even for an admin; an admin JWT creates; an agent JWT is 403', async () => {
    const input = () => ({ slug: uniqueName('room'), name: 'R' });
    const header = await t.api.post('/rooms', input(), { headers: { 'x-agent-id': admin.id } });
    expect(header.status).toBe(401);
    expect(header.body).toEqual({ error: expect.any(String) });
    expect((await t.api.post('/rooms', input(), { jwt: alice.jwt })).status).toBe(403);
    // A non-admin JWT with an admin's X-Agent-Id does not borrow the admin's rights.
    expect((await t.api.post('/rooms', input(), { jwt: alice.jwt, headers: { 'x-agent-id': admin.id } })).status).toBe(403);
    const created = await t.api.post('/rooms', input(), { jwt: admin.jwt });
    expect(created.status).toBe(201);
    expect(created.body.createdBy).toBe(admin.id);
  });

  it('membership: add and remove need an admin JWT', async () => {
    await expectAdminOnly('POST', `/rooms/${aliceRoom.id}/members`, { agentId: bob.id });
    await expectAdminOnly('DELETE', `/rooms/${aliceRoom.id}/members/${alice.id}`);
    const added = await t.api.post(`/rooms/${aliceRoom.id}/members`, { agentId: bob.id }, { jwt: admin.jwt });
    expect(added.status).toBe(201);
    expect((await t.api.delete(`/rooms/${aliceRoom.id}/members/${bob.id}`, { jwt: admin.jwt })).status).toBe(204);
  });

  it('room listings need a JWT and show an agent only its rooms; an admin sees all', async () => {
    for (const path of ['/rooms', '/api/v1/rooms']) {
      expect((await t.api.get(path)).status, path).toBe(401);
      // X-Agent-Id is no authentication in strict mode.
      expect((await t.api.get(path, { headers: { 'x-agent-id': admin.id } })).status, path).toBe(401);
    }
    const mine = await t.api.get('/rooms', { jwt: alice.jwt });
    expect(mine.status).toBe(200);
    expect(mine.body.map((r: { id: string }) => r.id)).toEqual([aliceRoom.id]);
    const versioned = await t.api.get('/api/v1/rooms', { jwt: bob.jwt });
    expect(versioned.body).toEqual({ rooms: [expect.objectContaining({ id: bobRoom.id, slug: bobRoom.slug })] });
    const all = await t.api.get('/api/v1/rooms', { jwt: admin.jwt });
    expect(all.body.rooms.map((r: { id: string }) => r.id)).toEqual(expect.arrayContaining([aliceRoom.id, bobRoom.id]));
  });

  it('history and sending need membership', async () => {
    const sent = await t.api.post(`/api/v1/rooms/${aliceRoom.id}/messages`, { body: 'mine' }, { jwt: alice.jwt });
    expect(sent.status).toBe(201);
    const read = await t.api.get(`/api/v1/rooms/${aliceRoom.id}/messages`, { jwt: alice.jwt });
    expect(read.status).toBe(200);
    expect(read.body.messages[0].id).toBe(sent.body.id);

    const foreignRead = await t.api.get(`/api/v1/rooms/${aliceRoom.id}/messages`, { jwt: bob.jwt });
    expect(foreignRead.status).toBe(403);
    expect(foreignRead.body).toEqual({ error: expect.any(String) });
    expect((await t.api.post(`/api/v1/rooms/${aliceRoom.id}/messages`, { body: 'intrude' }, { jwt: bob.jwt })).status).toBe(403);
    // An unknown room is still 404, not 403.
    expect((await t.api.get('/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages', { jwt: bob.jwt })).status).toBe(404);
  });

  it('the operational endpoints stay open', async () => {
    expect((await t.api.get('/healthz')).status).toBe(200);
    expect((await t.api.get('/readyz')).status).toBe(200);
    expect((await t.api.get('/metrics')).status).toBe(200);
  });
});
