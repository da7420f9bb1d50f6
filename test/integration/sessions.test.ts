import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startTestServer, TEST_JWT_SECRET } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { untilPast } from '../helpers/wait.js';

const b64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');
const decodePart = (part: string): Record<string, unknown> => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;

/** A JWT signed with HMAC by hand, so tests control every byte of it. */
function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, secret: string): string {
  const alg = header.alg === 'HS512' ? 'sha512' : header.alg === 'HS384' ? 'sha384' : 'sha256';
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  return `${input}.${createHmac(alg, Buffer.from(secret, 'utf8')).update(input).digest('base64url')}`;
}

describe('sessions: POST /api/v1/sessions', () => {
  const t = useTestServer();
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await newAgent(t.api);
  });

  const viaHeader = (token: string) => t.api.exchange(token);
  const issue = async (body: Record<string, unknown> = {}) => {
    const res = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, body);
    expect(res.status).toBe(201);
    return res.body as { token: string; prefix: string; id: string };
  };

  it('exchanges an API token in the Authorization header for an HS256 JWT: 201 {token, expiresAt}', async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await viaHeader(agent.apiToken);
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['expiresAt', 'token']);
    const [header, payload] = res.body.token.split('.') as [string, string, string];
    expect(decodePart(header)).toMatchObject({ alg: 'HS256', typ: 'JWT' });
    const claims = decodePart(payload);
    expect(claims).toMatchObject({ agentId: agent.id, role: 'agent' });
    expect(Number.isInteger(claims.iat)).toBe(true);
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.exp).toBe((claims.iat as number) + 900); // 15 minutes by default
    // expiresAt is the JWT's exp, as an ISO timestamp.
    expect(res.body.expiresAt).toBe(new Date((claims.exp as number) * 1000).toISOString());
  });

  it('accepts the API token as JSON {apiToken}', async () => {
    const res = await t.api.post('/api/v1/sessions', { apiToken: agent.apiToken });
    expect(res.status).toBe(201);
    expect(decodePart(res.body.token.split('.')[1])).toMatchObject({ agentId: agent.id, role: 'agent' });
  });

  it('accepts both forms when they carry the same token, and 400 when they differ', async () => {
    const same = await t.api.post('/api/v1/sessions', { apiToken: agent.apiToken }, { headers: { authorization: `Bearer ${agent.apiToken}` } });
    expect(same.status).toBe(201);
    const other = await issue();
    const differ = await t.api.post('/api/v1/sessions', { apiToken: other.token }, { headers: { authorization: `Bearer ${agent.apiToken}` } });
    expect(differ.status).toBe(400);
    expect(differ.body).toEqual({ error: expect.any(String), details: { apiToken: expect.any(String) } });
  });

  it('ignores a JWT in Authorization when the body has apiToken', async () => {
    const res = await t.api.post('/api/v1/sessions', { apiToken: agent.apiToken }, { jwt: agent.jwt });
    expect(res.status).toBe(201);
    expect(decodePart(res.body.token.split('.')[1])).toMatchObject({ agentId: agent.id });
  });

  it('answers 401 without any API token, or with only a JWT', async () => {
    for (const res of [await t.api.post('/api/v1/sessions'), await t.api.post('/api/v1/sessions', {}), await t.api.post('/api/v1/sessions', undefined, { jwt: agent.jwt })]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  it('answers 400 when apiToken is not a string', async () => {
    const res = await t.api.post('/api/v1/sessions', { apiToken: 42 });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ apiToken: 'must be a string' });
  });

  it('answers 401 for an unknown prefix, a wrong secret and malformed tokens, in both forms', async () => {
    const [, prefixHex, secret] = /^agt_([0-9a-f]{12})_([0-9a-f]{64})$/.exec(agent.apiToken)!;
    const wrongSecret = `agt_${prefixHex}_${secret!.replace(/^./, (c) => (c === '0' ? '1' : '0'))}`;
    const unknownPrefix = `agt_${prefixHex === '000000000000' ? '111111111111' : '000000000000'}_${secret}`;
    // Upper-case hex is malformed (prefix and secret both: a prefix of digits only would not change).
    const malformed = ['agt_', `agt_${prefixHex}`, `agt_${prefixHex}_`, `agt_${prefixHex}_${secret}x`, `agt_${prefixHex!.toUpperCase()}_${secret!.toUpperCase()}`, 'garbage', ''];
    for (const token of [wrongSecret, unknownPrefix, ...malformed]) {
      const body = await t.api.post('/api/v1/sessions', { apiToken: token });
      expect(body.status, `body ${token}`).toBe(401);
      expect(body.body).toEqual({ error: 'Invalid or expired API token' });
      if (token.startsWith('agt_')) {
        const header = await viaHeader(token);
        expect(header.status, `header ${token}`).toBe(401);
      }
    }
  });

  it('answers 401 for a revoked token', async () => {
    const token = await issue();
    expect((await viaHeader(token.token)).status).toBe(201);
    expect((await t.api.delete(`/api/v1/tokens/${token.prefix}`)).status).toBe(204);
    const res = await viaHeader(token.token);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Invalid or expired API token' });
  });

  it('answers 401 for a token whose expiresAt is in the past', async () => {
    const token = await issue({ scopes: {}, expiresAt: new Date(Date.now() - 60_000).toISOString() });
    expect((await viaHeader(token.token)).status).toBe(401);
    expect((await t.api.post('/api/v1/sessions', { apiToken: token.token })).status).toBe(401);
  });

  it('honours expiresAt: valid before, 401 once it is reached', async () => {
    const expiresAt = new Date(Date.now() + 2000);
    const token = await issue({ scopes: {}, expiresAt: expiresAt.toISOString() });
    expect((await viaHeader(token.token)).status).toBe(201);
    await untilPast(expiresAt);
    expect((await viaHeader(token.token)).status).toBe(401);
  });

  it('writes a jwt-issued audit record without the API token or the JWT', async () => {
    const fresh = await newAgent(t.api);
    const res = await viaHeader(fresh.apiToken);
    const records = (await listAudit(t.server.app.ctx.database.db, 'jwt-issued', 1000)).filter((r) => r.actorId === fresh.id);
    expect(records).toHaveLength(2); // newAgent's exchange and this one
    const exp = decodePart(res.body.token.split('.')[1]).exp;
    expect(records.map((r) => r.detail)).toContainEqual({ tokenId: expect.any(String), exp });
    const raw = JSON.stringify(records);
    expect(raw).not.toContain(fresh.apiToken.split('_')[2]);
    expect(raw).not.toContain(res.body.token);
    expect(raw).not.toContain(fresh.jwt);
  });

  it('a failed exchange writes no audit record', async () => {
    const db = t.server.app.ctx.database.db;
    const before = (await listAudit(db, 'jwt-issued', 10_000)).length;
    await t.api.post('/api/v1/sessions', { apiToken: 'agt_000000000000_' + '0'.repeat(64) });
    expect((await listAudit(db, 'jwt-issued', 10_000)).length).toBe(before);
  });
});

describe('session JWT lifetime: JWT_TTL_SECONDS', () => {
  it('sets exp = iat + the configured TTL and expiresAt accordingly', async () => {
    const server = await startTestServer({ config: { jwtTtlSeconds: 120 } });
    try {
      const api = new Api(server.url);
      const agent = await newAgent(api);
      const claims = decodePart(agent.jwt.split('.')[1]!);
      expect((claims.exp as number) - (claims.iat as number)).toBe(120);
    } finally {
      await server.close();
    }
  });
});

describe('JWT verification on a protected endpoint', () => {
  const secret = TEST_JWT_SECRET;
  const { api } = useTestServer({ config: { jwtSecret: secret } });
  let agent: TestAgent;
  let room: TestRoom;
  beforeAll(async () => {
    // A known secret lets the tests forge tokens that differ from a valid one in one respect only.
    const admin = await newAdmin(api);
    agent = await newAgent(api);
    room = await newRoom(api, admin, [agent]);
  });

  const history = (jwt: string) => api.get(`/api/v1/rooms/${room.id}/messages`, { jwt });
  const now = () => Math.floor(Date.now() / 1000);
  const claims = () => ({ agentId: agent.id, role: 'agent', iat: now(), exp: now() + 600 });

  it('accepts the issued JWT and a hand-made HS256 one with the right secret', async () => {
    expect((await history(agent.jwt)).status).toBe(200);
    expect((await history(signJwt({ alg: 'HS256', typ: 'JWT' }, claims(), secret))).status).toBe(200);
  });

  it('answers 401 without a JWT, or with an API token instead of one', async () => {
    const none = await api.get(`/api/v1/rooms/${room.id}/messages`);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: expect.any(String) });
    expect((await history(agent.apiToken)).status).toBe(401);
    const basic = await api.get(`/api/v1/rooms/${room.id}/messages`, { headers: { authorization: `Basic ${b64url('a:b')}` } });
    expect(basic.status).toBe(401);
  });

  it.each([
    ['alg none, unsigned', () => `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${b64url(JSON.stringify(claims()))}.`],
    ['alg none, with the original signature', () => {
      const [, payload, signature] = signJwt({ alg: 'HS256', typ: 'JWT' }, claims(), secret).split('.');
      return `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${payload}.${signature}`;
    }],
    ['a wrong secret', () => signJwt({ alg: 'HS256', typ: 'JWT' }, claims(), `${secret}-but-not-quite`)],
    ['HS512 with the same secret', () => signJwt({ alg: 'HS512', typ: 'JWT' }, claims(), secret)],
    ['HS384 with the same secret', () => signJwt({ alg: 'HS384', typ: 'JWT' }, claims(), secret)],
    ['an exp in the past', () => signJwt({ alg: 'HS256', typ: 'JWT' }, { ...claims(), iat: now() - 1000, exp: now() - 10 }, secret)],
    ['no exp', () => {
      const { exp: _exp, ...rest } = claims();
      return signJwt({ alg: 'HS256', typ: 'JWT' }, rest, secret);
    }],
    ['a non-numeric exp', () => signJwt({ alg: 'HS256', typ: 'JWT' }, { ...claims(), exp: 'never' }, secret)],
    ['no agentId', () => signJwt({ alg: 'HS256', typ: 'JWT' }, { role: 'agent', iat: now(), exp: now() + 600 }, secret)],
    ['an unknown role', () => signJwt({ alg: 'HS256', typ: 'JWT' }, { ...claims(), role: 'root' }, secret)],
    ['a payload modified after signing', () => {
      const [header, , signature] = agent.jwt.split('.');
      const payload = { ...decodePart(agent.jwt.split('.')[1]!), role: 'admin' };
      return `${header}.${b64url(JSON.stringify(payload))}.${signature}`;
    }],
    ['a truncated signature', () => agent.jwt.slice(0, -4)],
    ['garbage', () => 'not.a.jwt'],
  ])('answers 401 {error} for a JWT with %s', async (_case, forge) => {
    const res = await history(forge());
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String) });
  });

  it('refuses a JWT issued by another deployment (another secret)', async () => {
    const other = await startTestServer({ config: { jwtSecret: `${secret}-of-another-deployment` } });
    try {
      const otherApi = new Api(other.url);
      const stranger = await newAgent(otherApi);
      // A token from another deployment: valid shape, unknown signature here.
      expect((await history(stranger.jwt)).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});
