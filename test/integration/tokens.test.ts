import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import type { DB } from '../../src/store/schema.js';
import { newAgent, uniqueName, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const TOKEN_RE = /^agt_([0-9a-f]{12})_([0-9a-f]{64})$/;
const ARGON2ID_PREFIX = '$argon2id$v=19$m=19456,t=2,p=1$';
const TABLES: (keyof DB)[] = ['service_settings', 'agents', 'api_tokens', 'rooms', 'room_members', 'messages', 'audit_log'];

describe('API tokens: POST /api/v1/agents/:id/tokens and DELETE /api/v1/tokens/:prefix', () => {
  const t = useTestServer();
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await newAgent(t.api);
  });

  const exchange = (token: string) => t.api.exchange(token);

  /** Every row of every table, as JSON text: to prove a secret is stored nowhere. */
  async function dumpDatabase(): Promise<string> {
    const db = t.server.app.ctx.database.db;
    const rows = await Promise.all(TABLES.map((t) => db.selectFrom(t).selectAll().execute()));
    return JSON.stringify(rows);
  }

  it('issues agt_<prefix>_<secret> once: 201 {id, token, prefix, scopes, expiresAt, createdAt}', async () => {
    const res = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: { read: ['rooms'], n: 1 } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'prefix', 'scopes', 'token']);
    const match = TOKEN_RE.exec(res.body.token);
    expect(match).not.toBeNull();
    // The prefix is the first two segments; the secret is 256 random bits.
    expect(res.body.prefix).toBe(`agt_${match![1]}`);
    expect(res.body.scopes).toEqual({ read: ['rooms'], n: 1 });
    expect(res.body.expiresAt).toBeNull();
    expect(res.body.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await exchange(res.body.token)).status).toBe(201);
  });

  it('draws a fresh random prefix and secret for every token', async () => {
    const tokens = await Promise.all([1, 2, 3].map(() => t.api.post(`/api/v1/agents/${agent.id}/tokens`, {})));
    const parts = tokens.map((t) => TOKEN_RE.exec(t.body.token)!);
    expect(new Set(parts.map((p) => p[1])).size).toBe(3);
    expect(new Set(parts.map((p) => p[2])).size).toBe(3);
  });

  it('stores only an Argon2id hash (m=19456, t=2, p=1) of the secret, and the secret nowhere', async () => {
    const res = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, {});
    const secret = TOKEN_RE.exec(res.body.token)![2]!;
    const row = await t.server.app.ctx.database.db.selectFrom('api_tokens').selectAll().where('id', '=', res.body.id).executeTakeFirstOrThrow();
    expect(row.prefix).toBe(res.body.prefix);
    expect(row.secret_hash.startsWith(ARGON2ID_PREFIX)).toBe(true);
    expect(row.secret_hash).not.toContain(secret);
    const dump = await dumpDatabase();
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(res.body.token);
  });

  it('never returns the token again from any other endpoint', async () => {
    const res = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, {});
    const secret = TOKEN_RE.exec(res.body.token)![2]!;
    const session = await exchange(res.body.token);
    const jwt = session.body.token as string;
    const responses = await Promise.all([
      t.api.get('/api/v1/agents'),
      t.api.get('/rooms'),
      t.api.get('/api/v1/rooms', { jwt }),
      t.api.get('/metrics'),
      exchange(res.body.token),
    ]);
    for (const r of responses) expect(JSON.stringify(r.body)).not.toContain(secret);
    // The session response carries a JWT, not the API token.
    expect(session.body.token).not.toContain(secret);
  });

  it('defaults scopes to {} and accepts an empty or absent body', async () => {
    const empty = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, {});
    expect(empty.status).toBe(201);
    expect(empty.body.scopes).toEqual({});
    const none = await t.api.request('POST', `/api/v1/agents/${agent.id}/tokens`);
    expect(none.status).toBe(201);
    expect(none.body.scopes).toEqual({});
    const nul = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: {}, expiresAt: null });
    expect(nul.status).toBe(201);
    expect(nul.body.expiresAt).toBeNull();
  });

  it.each([
    ['an array', []],
    ['null', null],
    ['a string', 'read'],
    ['a number', 7],
  ])('rejects scopes that are %s: 400 details.scopes', async (_case, scopes) => {
    const res = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), details: { scopes: 'must be a JSON object' } });
  });

  it('rejects a body that is not an object', async () => {
    const res = await t.api.request('POST', `/api/v1/agents/${agent.id}/tokens`, { rawBody: '[1]' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ body: 'must be a JSON object' });
  });

  it('accepts an ISO expiresAt (normalised to UTC milliseconds) and rejects anything else', async () => {
    const ok = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: {}, expiresAt: '2099-01-02T03:04:05+02:00' });
    expect(ok.status).toBe(201);
    expect(ok.body.expiresAt).toBe('2099-01-02T01:04:05.000Z');
    for (const expiresAt of ['tomorrow', '2099-01-02', '2099-13-45T00:00:00Z', '2099-01-02T03:04:05', 1_900_000_000, {}, '']) {
      const res = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: {}, expiresAt });
      expect(res.status, JSON.stringify(expiresAt)).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['expiresAt']);
    }
  });

  it('answers 404 for an unknown agent and 400 for an id that is not a UUID', async () => {
    const unknown = await t.api.post('/api/v1/agents/0190a5d0-0000-7000-8000-000000000000/tokens', {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'Agent not found' });
    const bad = await t.api.post('/api/v1/agents/not-a-uuid/tokens', {});
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: expect.any(String), details: { id: 'must be a UUID' } });
  });

  it('accepts an upper-case agent id', async () => {
    const res = await t.api.post(`/api/v1/agents/${agent.id.toUpperCase()}/tokens`, {});
    expect(res.status).toBe(201);
    expect((await exchange(res.body.token)).status).toBe(201);
  });

  it('revokes by prefix: 204 with no body, then the token no longer gives a session', async () => {
    const issued = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, {});
    expect((await exchange(issued.body.token)).status).toBe(201);
    const res = await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`);
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    const after = await exchange(issued.body.token);
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ error: expect.any(String) });
    // Other tokens of the same agent keep working.
    expect((await exchange(agent.apiToken)).status).toBe(201);
  });

  it('answers 404 for an unknown, malformed or already revoked prefix', async () => {
    const issued = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, {});
    expect((await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`)).status).toBe(204);
    for (const prefix of [issued.body.prefix, 'agt_000000000000', 'agt_xyz', 'nothing', issued.body.token]) {
      const res = await t.api.delete(`/api/v1/tokens/${encodeURIComponent(prefix)}`);
      expect(res.status, prefix).toBe(404);
      expect(res.body).toEqual({ error: 'Token not found' });
    }
  });

  it('writes token-issued and token-revoked audit records without any secret', async () => {
    const target = await newAgent(t.api, { name: uniqueName('audited') });
    const issued = await t.api.post(`/api/v1/agents/${target.id}/tokens`, {});
    await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`);
    const db = t.server.app.ctx.database.db;
    // The subject is the token; the detail names its agent.
    const issuedRecords = (await listAudit(db, 'token-issued', 1000)).filter((r) => r.detail.agentId === target.id);
    const revoked = (await listAudit(db, 'token-revoked', 1000)).filter((r) => r.detail.agentId === target.id);
    expect(issuedRecords).toHaveLength(2); // newAgent's token and this one
    expect(issuedRecords.find((r) => r.subjectId === issued.body.id)?.detail).toEqual({ agentId: target.id, prefix: issued.body.prefix });
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ subjectId: issued.body.id, detail: { agentId: target.id, prefix: issued.body.prefix } });
    const secret = TOKEN_RE.exec(issued.body.token)![2]!;
    const raw = JSON.stringify(await db.selectFrom('audit_log').selectAll().execute());
    expect(raw).not.toContain(secret);
    expect(raw).not.toContain(TOKEN_RE.exec(target.apiToken)![2]!);
    expect(raw).not.toContain('$argon2id$');
  });
});
