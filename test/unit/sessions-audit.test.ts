import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { insertAgent } from '../../src/core/agents/agents.store.js';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { createAuthz } from '../../src/core/authz/authz.js';
import { createJwtCodec } from '../../src/core/auth/jwt.js';
import { createSessionsService } from '../../src/core/auth/sessions.service.js';
import { createTokensService } from '../../src/core/auth/tokens.service.js';
import { nullPublisher } from '../../src/core/events.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import type { SqliteKysely } from '../../src/store/sqlite.js';

describe('sessions: the jwt-issued records of a storm of exchanges', () => {
  let database: Database;
  let token: string;
  let agentId: string;

  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
    agentId = randomUUID();
    await insertAgent(database.db, { id: agentId, name: 'a', displayName: 'A', role: 'agent', createdAt: new Date().toISOString(), disabledAt: null, description: '', skills: [] });
    ({ token } = await createTokensService({ db: database.db, authz: createAuthz('open'), events: nullPublisher }).issue(null, agentId, {}));
  });
  afterEach(() => database.close());

  it('share commits, and each exchange answers only once its own record is stored', async () => {
    const jwt = createJwtCodec('unit-test-secret-unit-test-secret-0123', 3600);
    // Spaced from the first exchange on, 1 s apart: several records wait for each commit, however
    // slowly a loaded machine hashes (at 50 ms apart, hashes slower than that never shared one).
    const sessions = createSessionsService({ db: database.db, jwt, hashParallelism: 1, issuedCommits: { minIntervalMs: 1000, spaceFromRate: 0 } });
    const batches = vi.spyOn(database.db as SqliteKysely, 'writeBatch');
    const exchanges = 8;
    // The k-th exchange to answer finds at least k records: none answers before its commit.
    let answered = 0;
    const storedAtAnswer = await Promise.all(
      Array.from({ length: exchanges }, async () => {
        await sessions.exchange({ bearer: token, body: undefined });
        answered++;
        return { rank: answered, stored: (await listAudit(database.db, 'jwt-issued')).length };
      }),
    );
    for (const { rank, stored } of storedAtAnswer) expect(stored).toBeGreaterThanOrEqual(rank);
    expect((await listAudit(database.db, 'jwt-issued')).map((r) => r.actorId)).toEqual(Array(exchanges).fill(agentId));
    // Each commit holds its exchanges' records and at most one lastUsedAt update of the token.
    const committed = batches.mock.calls.map(([statements]) => statements.map((statement) => statement.sql));
    const records = committed.map((sqls) => sqls.filter((sql) => /insert into "audit_log"/i.test(sql)).length);
    const touches = committed.map((sqls) => sqls.filter((sql) => /update "api_tokens"/i.test(sql)).length);
    expect(records.reduce((a, n) => a + n, 0)).toBe(exchanges);
    expect(Math.max(...touches)).toBeLessThanOrEqual(1);
    expect(committed.length).toBeLessThan(exchanges);
  });
});
