import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAgent, type ApiResponse } from '../helpers/api.js';
import { createTestDatabase, startServerProcess, TEST_DIALECT, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from '../helpers/server.js';
import { expectOneCommitEach, taskAndMessages } from '../helpers/tasks.js';

// docs/tasks.md, "A move is one commit", against a real server process on the suite's engine: the
// process is killed (SIGKILL) with a move's transaction open, its message written and the move's own
// statements not yet (the test-only pause AMS_TEST_PAUSE_TASK_MOVE), and restarted on the same
// database: the move and its message are both absent. A move acknowledged just before a SIGKILL is
// there with its message. Either way, every history entry names a message that exists.

/** The paused move's transaction is open: it holds SQLite's write lock, or is a session idle in a transaction on PostgreSQL. */
async function expectOpenTransaction(url: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    const other = new SQLite(url.slice('sqlite:'.length), { timeout: 0 });
    try {
      expect(() => other.exec('begin immediate')).toThrow(/locked|busy/i);
    } finally {
      other.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction'");
    expect(rows[0]!.n).toBeGreaterThanOrEqual(1);
  } finally {
    await client.end();
  }
}

describe(`a task move killed inside its commit (${TEST_DIALECT})`, () => {
  let db: TestDatabase;
  let child: StartedServer | undefined;
  const env = (): Record<string, string> => ({ DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET, JWT_TTL_SECONDS: '3600' });

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await child?.kill('SIGKILL');
    await db?.drop();
  });

  it('SIGKILL between the message and the move: neither after the restart; SIGKILL after an acknowledged move: both', { timeout: 120_000 }, async () => {
    child = await startServerProcess({ ...env(), AMS_TEST_PAUSE_TASK_MOVE: 'true' }, { name: 'paused-node' });
    let api = new Api(child.url);
    const requester = await newAgent(api);
    const assignee = await newAgent(api);
    const created = await api.post('/api/v1/tasks', { assignee: assignee.id, title: 'Rotate the keys' }, { jwt: requester.jwt });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const taskId = created.body.id as string;

    // The move's transaction stops at the pause, open, its message's statements run; killed there.
    const moving: Promise<ApiResponse | Error> = api.post(`/api/v1/tasks/${taskId}/state`, { state: 'working', message: { body: 'killed move' } }, { jwt: assignee.jwt })
      .catch((err: Error) => err);
    await child.waitForLog((line) => line.testPause === 'task-move', 30_000);
    await expectOpenTransaction(db.url);
    const exit = await child.kill('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    expect(await moving).toBeInstanceOf(Error); // never answered

    child = await startServerProcess(env(), { name: 'restarted-node' });
    api = new Api(child.url);
    const afterCrash = await taskAndMessages(api, requester, taskId);
    expectOneCommitEach(afterCrash);
    expect(afterCrash.task.state).toBe('submitted');
    expect(afterCrash.task.history.map((h) => h.state)).toEqual(['submitted']);
    const bodies = (await api.get(`/api/v1/rooms/${afterCrash.task.roomId}/messages`, { jwt: requester.jwt })).body.messages.map((m: { body: string }) => m.body);
    expect(bodies).not.toContain('killed move');

    // Without the pause: acknowledged, then killed at once; both are there after the restart.
    const moved = await api.post(`/api/v1/tasks/${taskId}/state`, { state: 'working', message: { body: 'kept move' } }, { jwt: assignee.jwt });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    await child.kill('SIGKILL');
    child = await startServerProcess(env(), { name: 'restarted-again' });
    api = new Api(child.url);
    const afterAck = await taskAndMessages(api, requester, taskId);
    expectOneCommitEach(afterAck);
    expect(afterAck.task.history.map((h) => h.state)).toEqual(['submitted', 'working']);
    expect(afterAck.messageIds).toHaveLength(2);
  });
});
