import { Writable } from 'node:stream';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql, type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import type { Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrations/index.js';
import type { DB } from '../../src/store/schema.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { configFor, TEST_JWT_SECRET } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';

/** Every error body is {error: string} plus `details` (an object of strings) for validation errors. */
function expectErrorShape(body: unknown): void {
  expect(typeof body).toBe('object');
  const { error, details, ...rest } = body as { error?: unknown; details?: unknown };
  expect(rest).toEqual({});
  expect(typeof error).toBe('string');
  if (details !== undefined) {
    expect(typeof details).toBe('object');
    for (const value of Object.values(details as object)) expect(typeof value).toBe('string');
  }
  expect(JSON.stringify(body)).not.toMatch(/\bat .+:\d+:\d+|node_modules|\/src\//);
}

describe('errors: one JSON shape for every client mistake', () => {
  const { api } = useTestServer();
  let agent: TestAgent;
  let roomId: string;
  beforeAll(async () => {
    const admin = await newAdmin(api);
    agent = await newAgent(api);
    roomId = (await newRoom(api, admin, [agent])).id;
  });

  it('unknown routes and methods: 404 {error: "Not Found"} as JSON', async () => {
    for (const [method, path] of [['GET', '/nope'], ['POST', '/api/v1/nope'], ['DELETE', '/api/v1/agents'], ['PUT', '/rooms'], ['GET', '/api/v2/agents'], ['PATCH', `/api/v1/rooms/${roomId}/messages`]] as const) {
      const res = await api.request(method, path, method === 'GET' ? {} : { body: {} });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ error: 'Not Found' });
    }
  });

  it('malformed JSON: 400 {error}', async () => {
    for (const rawBody of ['{"name":', '{name: "x"}', "{'a':1}", '{"a":1,}', 'undefined']) {
      const res = await api.request('POST', '/api/v1/agents', { rawBody });
      expect(res.status, rawBody).toBe(400);
      expect(res.body).toEqual({ error: 'Malformed JSON body' });
    }
    const send = await api.request('POST', `/api/v1/rooms/${roomId}/messages`, { jwt: agent.jwt, rawBody: '{"body": "unterminated' });
    expect(send.status).toBe(400);
    expectErrorShape(send.body);
  });

  it('a body over the route\'s limit (1 MiB at most): 413 {error}, and the server keeps serving', async () => {
    const huge = JSON.stringify({ body: 'x'.repeat(1024 * 1024) });
    const res = await api.request('POST', `/api/v1/rooms/${roomId}/messages`, { jwt: agent.jwt, rawBody: huge });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: 'Request body is larger than this endpoint accepts' });
    const agents = await api.request('POST', '/api/v1/agents', { rawBody: huge });
    expect(agents.status).toBe(413);
    // Just under the route's limit (512 KiB for a send) is parsed, then refused by validation.
    const justUnder = JSON.stringify({ body: 'x'.repeat(512 * 1024 - 20) });
    const under = await api.request('POST', `/api/v1/rooms/${roomId}/messages`, { jwt: agent.jwt, rawBody: justUnder });
    expect(under.status).toBe(400);
    expect(under.body.details).toEqual({ body: 'must be at most 16384 characters' });
    expect((await api.get('/healthz')).status).toBe(200);
  });

  it('a path id that is not a UUID: 400 with details naming it', async () => {
    const cases: [string, string, string][] = [
      ['POST', '/api/v1/agents/x/tokens', 'id'],
      ['GET', '/api/v1/rooms/x/messages', 'roomId'],
      ['POST', '/api/v1/rooms/x/messages', 'roomId'],
      ['POST', '/rooms/x/members', 'id'],
      ['DELETE', `/rooms/x/members/${agent.id}`, 'roomId'],
      ['DELETE', `/rooms/${roomId}/members/x`, 'agentId'],
      ['GET', `/api/v1/rooms/${'1'.repeat(300)}/messages`, 'roomId'],
    ];
    for (const [method, path, field] of cases) {
      const res = await api.request(method, path, { jwt: agent.jwt, body: method === 'POST' ? { body: 'x', agentId: agent.id } : undefined });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body).toEqual({ error: 'Validation failed', details: { [field]: 'must be a UUID' } });
    }
  });

  it('a malformed or over-long URL: 400 in the same shape', async () => {
    for (const path of ['/api/v1/rooms/%zz/messages', '/rooms/%E0%A4%A/members', `/api/v1/tokens/${'a'.repeat(2000)}`]) {
      const method = path.startsWith('/rooms') ? 'POST' : path.startsWith('/api/v1/tokens') ? 'DELETE' : 'GET';
      const res = await api.request(method, path);
      expect(res.status, path).toBe(400);
      expectErrorShape(res.body);
    }
    // An encoded slash or odd characters in a param reach validation.
    const odd = await api.delete('/api/v1/tokens/agt_%2F..%2F');
    expect(odd.status).toBe(404);
    expectErrorShape(odd.body);
  });

  it('a body that is not JSON: 415 for a foreign content type, 400 for text', async () => {
    const form = await api.request('POST', '/api/v1/agents', { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expectErrorShape(form.body);
    const text = await api.request('POST', '/api/v1/agents', { rawBody: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(400);
    expect(text.body.details).toEqual({ body: 'must be a JSON object' });
  });

  it('an empty body with a JSON content type means "no body"', async () => {
    const res = await api.request('POST', '/api/v1/agents', { rawBody: '', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ body: 'must be a JSON object' });
    const del = await api.request('DELETE', '/api/v1/tokens/agt_000000000000', { rawBody: '', headers: { 'content-type': 'application/json' } });
    expect(del.status).toBe(404);
  });

  it('strips __proto__ from JSON bodies instead of failing', async () => {
    const res = await api.request('POST', '/api/v1/agents', { rawBody: `{"__proto__":{"role":"admin"},"name":"proto-${Date.now()}","displayName":"p","role":"agent"}` });
    expect(res.status).toBe(201);
    expect(res.body.role).toBe('agent');
  });

  it('every error of every kind has the {error, details?} shape', async () => {
    const responses = await Promise.all([
      api.post('/api/v1/agents', { name: 'BAD', displayName: '', role: 'x' }),
      api.post('/api/v1/sessions', { apiToken: 'agt_nope' }),
      api.post('/rooms', { slug: 's', name: 'n' }, { headers: { 'x-agent-id': agent.id } }),
      api.post('/rooms/01900000-0000-7000-8000-000000000000/members', { agentId: agent.id }),
      api.get(`/api/v1/rooms/${roomId}/messages?limit=0`, { jwt: agent.jwt }),
    ]);
    expect(responses.map((r) => r.status)).toEqual([400, 401, 403, 404, 400]);
    for (const r of responses) expectErrorShape(r.body);
  });
});

/**
 * A SQLite database whose every query can be made to fail on demand, to drive the server
 * through a storage failure and back without stopping anything shared.
 */
function switchableDatabase(): { database: Database; fail(err: Error | null): void } {
  let failure: Error | null = null;
  const dialect = new SqliteDialect({ database: new SQLite(':memory:') });
  const createDriver = dialect.createDriver.bind(dialect);
  const wrap = (connection: DatabaseConnection): DatabaseConnection => ({
    executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      return failure ? Promise.reject(failure) : connection.executeQuery<R>(query);
    },
    streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
  });
  dialect.createDriver = (): Driver => {
    const driver = createDriver();
    const connections = new Map<DatabaseConnection, DatabaseConnection>();
    const inner = (c: DatabaseConnection): DatabaseConnection => connections.get(c) ?? c;
    return {
      init: () => driver.init(),
      acquireConnection: async () => {
        const real = await driver.acquireConnection();
        const wrapped = wrap(real);
        connections.set(wrapped, real);
        return wrapped;
      },
      beginTransaction: (c, settings) => driver.beginTransaction(inner(c), settings),
      commitTransaction: (c) => driver.commitTransaction(inner(c)),
      rollbackTransaction: (c) => driver.rollbackTransaction(inner(c)),
      releaseConnection: async (c) => {
        await driver.releaseConnection(inner(c));
        connections.delete(c);
      },
      destroy: () => driver.destroy(),
    };
  };
  const db = new Kysely<DB>({ dialect });
  return {
    database: {
      db,
      dialect: 'sqlite',
      ping: async () => {
        await sql`select 1`.execute(db);
      },
      close: () => db.destroy(),
    },
    fail: (err) => {
      failure = err;
    },
  };
}

const driverError = (message: string, code?: string): Error => Object.assign(new Error(message), code ? { code } : {});

describe('storage failures', () => {
  let app: RunningApp;
  let api: Api;
  let storage: ReturnType<typeof switchableDatabase>;
  const logs: string[] = [];
  beforeAll(async () => {
    storage = switchableDatabase();
    await migrateToLatest(storage.database.db as unknown as Kysely<unknown>, 'sqlite');
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logs.push(chunk.toString('utf8'));
        callback();
      },
    });
    const config = configFor('sqlite::memory:', { jwtSecret: TEST_JWT_SECRET, rateLimit: { anonPerMinute: 100_000, agentPerMinute: 100_000 } });
    app = await startApp(config, createLogger('info', sink), { database: storage.database });
    api = new Api(app.url);
  });
  afterAll(() => app.close());

  it('an unexpected failure is a bare 500: no message, code, stack or SQL in the response or the logs', async () => {
    const agent = await newAgent(api);
    storage.fail(driverError('SQLITE_ERROR: no such column: secret_internal_detail', 'SQLITE_ERROR'));
    const res = await api.get('/api/v1/agents', { jwt: agent.jwt });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'Internal Server Error' });
    storage.fail(null);
    const logged = logs.join('');
    expect(logged).toContain('request failed');
    expect(logged).not.toMatch(/"stack"|\n\s+at /);
    expect(logged).not.toContain(agent.jwt);
    expect(logged).not.toContain(agent.apiToken);
  });

  it('the database unreachable: 503 {error} and /readyz 503 with the failing check; recovers by itself', async () => {
    const agent = await newAgent(api);
    storage.fail(driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'));
    const res = await api.get('/api/v1/agents');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'Database unavailable' });
    const send = await api.post('/api/v1/sessions', { apiToken: agent.apiToken });
    expect(send.status).toBe(503);
    const ready = await api.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: 'unavailable', checks: { database: 'fail' } });
    expect((await api.get('/healthz')).status).toBe(200);

    storage.fail(driverError('database is locked', 'SQLITE_BUSY'));
    expect((await api.get('/api/v1/agents')).status).toBe(503);

    storage.fail(null);
    expect((await api.get('/readyz')).body).toEqual({ status: 'ready', checks: { database: 'ok' } });
    expect((await api.get('/api/v1/agents')).status).toBe(200);
    expect((await api.post('/api/v1/sessions', { apiToken: agent.apiToken })).status).toBe(201);
  });

  it('request logs carry no credentials', async () => {
    const agent = await newAgent(api);
    await api.get(`/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages?token=${agent.jwt}`, { jwt: agent.jwt });
    await api.post('/api/v1/sessions', { apiToken: agent.apiToken }, { headers: { authorization: `Bearer ${agent.apiToken}` } });
    const logged = logs.join('');
    expect(logged).toContain('request completed');
    expect(logged).not.toContain(agent.jwt);
    expect(logged).not.toContain(agent.apiToken);
    expect(logged).not.toContain(agent.apiToken.split('_')[2]);
  });
});
