import { afterEach, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { createTestDatabase, startTestServer, TEST_JWT_SECRET, type TestDatabase, type TestServer } from '../helpers/server.js';

describe('restart on the same database', () => {
  let db: TestDatabase | undefined;
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close({ keepDatabase: true });
    await db?.drop();
    server = undefined;
    db = undefined;
  });

  async function restart(config = {}): Promise<Api> {
    await server?.close({ keepDatabase: true });
    server = await startTestServer({ db: db!, config });
    return new Api(server.url);
  }

  it('keeps agents, tokens, rooms, memberships, messages and audit records, and a JWT issued before stays valid', async () => {
    db = await createTestDatabase();
    let api = await restart();
    const admin = await newAdmin(api);
    const member = await newAgent(api);
    const revoked = await newAgent(api);
    const room = await newRoom(api, admin, [member]);
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await sendMessage(api, member, room.id, `before restart ${i}`));
    expect((await api.delete(`/api/v1/tokens/${revoked.prefix}`)).status).toBe(204);
    const agentsBefore = (await api.get('/api/v1/agents')).body;
    const auditBefore = await server!.app.ctx.database.db.selectFrom('audit_log').select(['id', 'event']).orderBy('id').execute();

    api = await restart();

    expect((await api.get('/api/v1/agents')).body).toEqual(agentsBefore);
    expect((await api.get('/rooms')).body).toEqual([{ ...room, lastSeq: 5 }]);
    // The JWT from before the restart still authenticates (same signing secret).
    const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: member.jwt });
    expect(history.status).toBe(200);
    expect(history.body.messages.map((m: { id: string }) => m.id)).toEqual(sent.map((m) => m.id).reverse());
    // Membership survived: the member may still send, an outsider may not.
    expect((await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'after restart' }, { jwt: member.jwt })).status).toBe(201);
    expect((await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'x' }, { jwt: revoked.jwt })).status).toBe(403);
    // API tokens: an active one still exchanges, the revoked one stays revoked.
    expect((await api.post('/api/v1/sessions', { apiToken: member.apiToken })).status).toBe(201);
    expect((await api.post('/api/v1/sessions', { apiToken: revoked.apiToken })).status).toBe(401);
    const auditAfter = await server!.app.ctx.database.db.selectFrom('audit_log').select(['id', 'event']).orderBy('id').execute();
    expect(auditAfter.slice(0, auditBefore.length)).toEqual(auditBefore);
    // Unique constraints survived too.
    expect((await api.post('/rooms', { slug: room.slug, name: 'again' }, { headers: { 'x-agent-id': admin.id } })).status).toBe(409);
  });

  // SQLite whatever the suite's dialect: the generated secret is an embedded-mode feature (PostgreSQL requires JWT_SECRET).
  it('without JWT_SECRET, generates one secret on first start and keeps it in the database', async () => {
    db = await createTestDatabase('sqlite');
    let api = await restart({ jwtSecret: null });
    const agent = await newAgent(api);
    const read = async () => (await server!.app.ctx.database.db.selectFrom('service_settings').select('value').where('key', '=', 'jwt_secret').executeTakeFirstOrThrow()).value;
    const secret = await read();
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);

    api = await restart({ jwtSecret: null });
    expect(await read()).toBe(secret);
    expect((await api.get(`/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages`, { jwt: agent.jwt })).status).toBe(404);

    // A configured JWT_SECRET takes precedence: sessions signed with the generated one end.
    api = await restart({ jwtSecret: TEST_JWT_SECRET });
    expect((await api.get(`/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages`, { jwt: agent.jwt })).status).toBe(401);
    const fresh = await api.post('/api/v1/sessions', { apiToken: agent.apiToken });
    expect(fresh.status).toBe(201);
    expect((await api.get(`/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages`, { jwt: fresh.body.token })).status).toBe(404);
  });
});
