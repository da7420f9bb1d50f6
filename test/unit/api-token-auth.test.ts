import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertAgent } from '../../src/core/agents/agents.store.js';
import { createApiTokenAuth, VERIFIED_TTL_MS, type ApiTokenAuth } from '../../src/core/auth/api-token-auth.js';
import { createAuthz } from '../../src/core/authz/authz.js';
import { createJwtCodec } from '../../src/core/auth/jwt.js';
import { ACTIVE_TTL_MS, createSessionAuth } from '../../src/core/auth/session-auth.js';
import { createSessionsService, type SessionsService } from '../../src/core/auth/sessions.service.js';
import { createTokensService } from '../../src/core/auth/tokens.service.js';
import { revokeTokenByPrefix } from '../../src/core/auth/tokens.store.js';
import { nullPublisher } from '../../src/core/events.js';
import { AppError } from '../../src/errors.js';
import { openDatabase, type Database } from '../../src/store/database.js';

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).status).toBe(401);
  return (error as AppError).message;
}

describe('ApiTokenAuth: an API token as a bearer, verified once, checked every request', () => {
  let database: Database;
  let auth: ApiTokenAuth;
  let exchanges: number;
  let offset: number;
  let agentId: string;
  const start = Date.now();
  const now = (): number => start + offset;

  const issue = async (expiresAt?: number) =>
    createTokensService({ db: database.db, authz: createAuthz('open'), events: nullPublisher })
      .issue(null, agentId, expiresAt === undefined ? {} : { expiresAt: new Date(expiresAt).toISOString() });

  beforeEach(async () => {
    offset = 0;
    exchanges = 0;
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
    const jwt = createJwtCodec('unit-test-secret-unit-test-secret-0123', 3600, now);
    const sessions = createSessionsService({ db: database.db, jwt, hashParallelism: 1 });
    const counting: SessionsService = { exchange: (request) => (exchanges++, sessions.exchange(request)) };
    const sessionAuth = createSessionAuth({ db: database.db, authz: createAuthz('open'), jwt, jwtTtlSeconds: 3600, now });
    auth = createApiTokenAuth({ db: database.db, sessions: counting, sessionAuth, now });
    agentId = randomUUID();
    await insertAgent(database.db, { id: agentId, name: 'a', displayName: 'A', role: 'agent', createdAt: new Date(start).toISOString(), disabledAt: null, description: '', skills: [] });
  });
  afterEach(() => database.close());

  it('hashes a token once per VERIFIED_TTL_MS, concurrent first requests included', async () => {
    const { token } = await issue();
    const principals = await Promise.all([auth.authenticate(token), auth.authenticate(token), auth.authenticate(token)]);
    expect(principals.map((p) => p.agentId)).toEqual([agentId, agentId, agentId]);
    expect(auth.isVerified(token)).toBe(true);
    offset = VERIFIED_TTL_MS - 1;
    await auth.authenticate(token);
    expect(exchanges).toBe(1);
    offset = VERIFIED_TTL_MS + 1;
    expect(auth.isVerified(token)).toBe(false);
    await auth.authenticate(token);
    expect(exchanges).toBe(2);
  });

  it('refuses at once once told of the revocation (the event here, the bus elsewhere)', async () => {
    const issued = await issue();
    await auth.authenticate(issued.token);
    await revokeTokenByPrefix(database.db, issued.prefix, new Date(now()).toISOString());
    auth.revoked(issued.id);
    expect(await refusal(auth.authenticate(issued.token))).toMatch(/revoked/);
  });

  it('sees a revocation it was not told of within ACTIVE_TTL_MS (its row is read again)', async () => {
    const issued = await issue();
    await auth.authenticate(issued.token);
    await revokeTokenByPrefix(database.db, issued.prefix, new Date(now()).toISOString());
    offset = ACTIVE_TTL_MS - 1;
    await expect(auth.authenticate(issued.token)).resolves.toMatchObject({ agentId });
    offset = ACTIVE_TTL_MS + 1;
    expect(await refusal(auth.authenticate(issued.token))).toMatch(/revoked/);
  });

  it('refuses a token once its expiresAt passes, on the next request', async () => {
    // A minute ahead: the exchange checks expiry against the real clock.
    const { token } = await issue(start + 60_000);
    await auth.authenticate(token);
    offset = 59_999;
    await expect(auth.authenticate(token)).resolves.toMatchObject({ agentId });
    offset = 60_000;
    expect(await refusal(auth.authenticate(token))).toMatch(/expired/);
    expect(exchanges).toBe(1);
  });

  it('refuses what is not a valid token without caching it', async () => {
    expect(await refusal(auth.authenticate('not-a-token'))).toMatch(/Invalid/);
    const bogus = `agt_${'a'.repeat(12)}_${'b'.repeat(64)}`;
    await refusal(auth.authenticate(bogus));
    expect(auth.isVerified(bogus)).toBe(false);
  });
});
