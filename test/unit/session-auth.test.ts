import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertAgent, setAgentDisabledAt } from '../../src/core/agents/agents.store.js';
import { createAuthz } from '../../src/core/authz/authz.js';
import { createJwtCodec, type JwtCodec } from '../../src/core/auth/jwt.js';
import { ACTIVE_TTL_MS, createSessionAuth, type SessionAuth } from '../../src/core/auth/session-auth.js';
import { AppError } from '../../src/errors.js';
import { openDatabase, type Database } from '../../src/store/database.js';

const SECRET = 'unit-test-secret-unit-test-secret-0123';

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).status).toBe(401);
  return error as AppError;
}

describe('SessionAuth: the agent of a session JWT', () => {
  let database: Database;
  let auth: SessionAuth;
  let jwt: JwtCodec;
  let offset: number;
  let agentId: string;
  const start = Date.now();
  const now = (): number => start + offset;

  beforeEach(async () => {
    offset = 0;
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
    jwt = createJwtCodec(SECRET, 900, now);
    auth = createSessionAuth({ db: database.db, authz: createAuthz('open'), jwt, jwtTtlSeconds: 900, now });
    agentId = randomUUID();
    await insertAgent(database.db, { id: agentId, name: 'a', displayName: 'A', role: 'agent', createdAt: new Date(start).toISOString(), disabledAt: null, description: '', skills: [] });
  });
  afterEach(() => database.close());

  const token = (id = agentId): string => jwt.sign({ agentId: id, role: 'agent' }).token;

  it('refuses a JWT whose agent does not exist, and an API token', async () => {
    expect((await refusal(auth.authenticate(token(randomUUID())))).message).toBe('Invalid or expired token');
    expect((await refusal(auth.authenticate(`agt_0123456789ab_${'0'.repeat(64)}`))).message).toMatch(/API token/);
  });

  it('trusts "active" for at most ACTIVE_TTL_MS when the change was made elsewhere (another node, no event)', async () => {
    await auth.authenticate(token());
    await setAgentDisabledAt(database.db, agentId, new Date(now()).toISOString());
    offset = ACTIVE_TTL_MS - 1;
    await expect(auth.authenticate(token())).resolves.toMatchObject({ agentId });
    // Checks that must not trust the cache see it at once.
    expect((await refusal(auth.assertLive({ agentId, role: 'agent' }, { fresh: true }))).message).toBe('This agent is disabled');
    offset = ACTIVE_TTL_MS + 1;
    expect((await refusal(auth.authenticate(token()))).message).toBe('This agent is disabled');
  });

  it('refuses at once once told the agent changed (the event bridge does), and accepts again after enabling', async () => {
    await auth.authenticate(token());
    await setAgentDisabledAt(database.db, agentId, new Date(now()).toISOString());
    auth.agentChanged(agentId);
    await refusal(auth.authenticate(token()));
    await setAgentDisabledAt(database.db, agentId, null);
    await expect(auth.authenticate(token())).resolves.toMatchObject({ agentId });
  });

  it('does not cache an answer read while the agent changed', async () => {
    const pending = auth.authenticate(token());
    // The change commits and is announced while the lookup above is in flight.
    auth.agentChanged(agentId);
    await pending;
    await setAgentDisabledAt(database.db, agentId, new Date(now()).toISOString());
    await refusal(auth.authenticate(token()));
  });
});
