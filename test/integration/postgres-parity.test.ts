import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { findAgentById } from '../../src/core/agents/agents.store.js';
import { findTokenByPrefix } from '../../src/core/auth/tokens.store.js';
import { AppError, classifyStorageError } from '../../src/errors.js';
import { newAdmin, newAgent, newRoom, sendMessage, uniqueName, type TestAgent, type TestRoom } from '../helpers/api.js';
import { createTestDatabase } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { servicesAvailable } from '../helpers/services.js';

// The same behaviour on both engines, checked where they differ: types at the store boundary,
// uuid ordering, JSON, constraint errors, values PostgreSQL refuses. Runs on SQLite always and on
// PostgreSQL when it is reachable (mandatory in CI).
const withPostgres = await servicesAvailable('PostgreSQL parity tests', ['postgres']);
const dialects = withPostgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(dialects)('storage parity on %s', (dialect) => {
  const { server, api } = useTestServer(async () => ({ db: await createTestDatabase(dialect) }));
  let admin: TestAgent;
  let member: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    admin = await newAdmin(api);
    member = await newAgent(api);
    room = await newRoom(api, admin, [member]);
  });

  it('runs on the engine asked for, with the pool settings of the store', async () => {
    const { database } = server.app.ctx;
    expect(database.dialect).toBe(dialect);
    if (dialect === 'postgres') {
      const settings = await sql<{ statement_timeout: string; application_name: string }>`
        select current_setting('statement_timeout') as statement_timeout, current_setting('application_name') as application_name`.execute(database.db);
      expect(settings.rows[0]).toEqual({ statement_timeout: '5s', application_name: 'agent-messaging-service' });
    }
  });

  it('returns timestamps as ISO strings with milliseconds, identical on write and read', async () => {
    const listed = await api.get('/api/v1/agents');
    const mine = listed.body.find((a: { id: string }) => a.id === member.id);
    expect(mine.createdAt).toMatch(ISO_MS);
    const rooms = await api.get('/api/v1/rooms', { jwt: member.jwt });
    expect(rooms.body.rooms.find((r: { id: string }) => r.id === room.id)).toEqual({ ...room, lastSeq: expect.any(Number), readSeq: expect.any(Number), unreadCount: expect.any(Number), attentionCount: expect.any(Number) });
    expect((room as TestRoom & { createdAt: string }).createdAt).toMatch(ISO_MS);

    // A zone offset is normalised to UTC; the stored value compares correctly with "now".
    const future = await api.post(`/api/v1/agents/${member.id}/tokens`, { scopes: {}, expiresAt: '2099-01-02T03:04:05.678+02:00' });
    expect(future.status).toBe(201);
    expect(future.body.expiresAt).toBe('2099-01-02T01:04:05.678Z');
    expect((await api.post('/api/v1/sessions', { apiToken: future.body.token })).status).toBe(201);
    const past = await api.post(`/api/v1/agents/${member.id}/tokens`, { scopes: {}, expiresAt: '2001-01-01T00:00:00Z' });
    expect(past.status).toBe(201);
    expect((await api.post('/api/v1/sessions', { apiToken: past.body.token })).status).toBe(401);

    // Raw rows: both engines hand the store the same JS types.
    const row = await server.app.ctx.database.db.selectFrom('agents').selectAll().where('id', '=', member.id).executeTakeFirstOrThrow();
    expect(typeof row.created_at).toBe('string');
    expect(row.created_at).toBe(mine.createdAt);
  });

  it('round-trips JSON columns and returns counts and sums as numbers', async () => {
    const scopes = { read: ['rooms', 'messages'], nested: { level: 2, on: true, none: null }, note: 'héllo 👍', n: 1.5 };
    const issued = await api.post(`/api/v1/agents/${member.id}/tokens`, { scopes });
    expect(issued.status).toBe(201);
    expect(issued.body.scopes).toEqual(scopes);
    const { db } = server.app.ctx.database;
    const stored = await findTokenByPrefix(db, issued.body.prefix);
    expect(stored?.scopes).toEqual(scopes);
    expect(stored?.createdAt).toBe(issued.body.createdAt);
    expect(stored?.agentDisabled).toBe(false);

    const mention = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'with mentions', mentions: [admin.id.toUpperCase()] }, { jwt: member.jwt });
    expect(mention.status).toBe(201);
    const history = await api.get(`/api/v1/rooms/${room.id}/messages?limit=1`, { jwt: member.jwt });
    expect(history.body.messages[0]).toMatchObject({ id: mention.body.id, mentions: [admin.id] });

    const counted = await db
      .selectFrom('api_tokens')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.sum<number>(sql`1`).as('total')])
      .where('agent_id', '=', member.id)
      .executeTakeFirstOrThrow();
    expect(counted).toEqual({ n: 4, total: 4 }); // the session token, future, past, this one
  });

  it('pages history by time-ordered ids exactly, even within one millisecond', async () => {
    const own = await newRoom(api, admin, [member]);
    const sent: string[] = [];
    for (let batch = 0; batch < 6; batch++) {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => sendMessage(api, member, own.id, `m${batch}-${i}`)));
      sent.push(...results.map((r) => r.id));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    const pages: boolean[] = [];
    do {
      // Upper-case cursors are accepted and mean the same message.
      const query: string = cursor === null ? '?limit=50' : `?limit=50&cursor=${cursor.toUpperCase()}`;
      const page = await api.get(`/api/v1/rooms/${own.id}/messages${query}`, { jwt: member.jwt });
      expect(page.status).toBe(200);
      seen.push(...page.body.messages.map((m: { id: string }) => m.id));
      pages.push(page.body.hasMore);
      cursor = page.body.hasMore ? page.body.nextCursor : null;
    } while (cursor !== null);
    expect(pages).toEqual([true, true, false]);
    expect(seen).toHaveLength(120);
    expect(seen).toEqual([...sent].sort().reverse()); // newest first, none lost or repeated
  });

  it('turns unique violations into 409, also when requests race', async () => {
    const name = uniqueName('race');
    const racers = await Promise.all(
      Array.from({ length: 6 }, () => api.post('/api/v1/agents', { name, displayName: 'Racer', role: 'agent' })),
    );
    expect(racers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);

    const slug = uniqueName('slug');
    const rooms = await Promise.all(
      Array.from({ length: 4 }, () => api.post('/rooms', { slug, name: 'Race' }, { headers: { 'x-agent-id': admin.id } })),
    );
    expect(rooms.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);

    const joiner = await newAgent(api);
    const joins = await Promise.all(Array.from({ length: 4 }, () => api.post(`/rooms/${room.id}/members`, { agentId: joiner.id })));
    expect(joins.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    for (const res of [...racers, ...rooms, ...joins].filter((r) => r.status === 409)) expect(res.body).toEqual({ error: expect.any(String) });

    // One clientMsgId sent concurrently stores one message; every sender gets it back.
    const clientMsgId = uniqueName('cmid');
    const sends = await Promise.all(
      Array.from({ length: 5 }, () => api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'once', clientMsgId }, { jwt: member.jwt })),
    );
    expect(sends.filter((s) => s.status === 201)).toHaveLength(1);
    expect(sends.every((s) => s.status === 201 || s.status === 200)).toBe(true);
    expect(new Set(sends.map((s) => s.body.id)).size).toBe(1);
    const history = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: member.jwt });
    expect(history.body.messages.filter((m: { id: string }) => m.id === sends[0]!.body.id)).toHaveLength(1);
  });

  it('answers client mistakes with 4xx on both engines, never 500', async () => {
    const cases: [string, Promise<{ status: number }>, number][] = [
      ['non-UUID room id', api.get('/api/v1/rooms/not-a-uuid/messages', { jwt: member.jwt }), 400],
      ['non-UUID agent id', api.post('/api/v1/agents/12345/tokens', { scopes: {} }), 400],
      ['non-UUID member', api.delete(`/rooms/${room.id}/members/zzz`), 400],
      ['unknown cursor', api.get(`/api/v1/rooms/${room.id}/messages?cursor=${admin.id}`, { jwt: member.jwt }), 400],
      ['NUL in a body', api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'a\u0000b' }, { jwt: member.jwt }), 400],
      ['lone surrogate', api.request('POST', `/api/v1/rooms/${room.id}/messages`, { rawBody: '{"body":"\\ud800"}', jwt: member.jwt }), 400],
      ['garbage X-Agent-Id', api.post('/rooms', { slug: uniqueName('s'), name: 'x' }, { headers: { 'x-agent-id': "1' or '1'='1" } }), 401],
      ['unknown agent', api.post(`/rooms/${room.id}/members`, { agentId: '0190a000-0000-7000-8000-000000000000' }), 404],
    ];
    for (const [what, pending, status] of cases) expect({ what, status: (await pending).status }).toEqual({ what, status });
  });

  it('classifies a value the engine refuses as a client error at the store boundary', async () => {
    const { db } = server.app.ctx.database;
    if (dialect === 'sqlite') {
      expect(await findAgentById(db, 'not-a-uuid')).toBeNull();
      return;
    }
    // PostgreSQL refuses a malformed uuid outright; validation should stop it first, and if it
    // does not, the client gets a 400, not a 500.
    const err = await findAgentById(db, 'not-a-uuid').catch((e: unknown) => e);
    const classified = classifyStorageError(err);
    expect(classified).toBeInstanceOf(AppError);
    expect((classified as AppError).status).toBe(400);
  });
});
