import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { auditStatement, listAudit } from '../../src/core/audit/audit.store.js';
import type { Task } from '../../src/core/tasks/task.js';
import { findTask, insertHistoryStatement, insertTaskStatement, moveTaskStatement } from '../../src/core/tasks/tasks.store.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { isUniqueViolation } from '../../src/store/errors.js';
import { commitStatements } from '../../src/store/statements.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/server.js';

// A move is written without reading the UPDATE's row count (tasks.store.ts, moveTaskStatement): a
// move from a version another move already left collides on the history's primary key, and its
// whole transaction (the update, the entry, the audit record) is refused. On the suite's engine.

describe(`task moves as one transaction of statements (${TEST_DIALECT})`, () => {
  let fresh: TestDatabase;
  let database: Database;

  beforeEach(async () => {
    fresh = await createTestDatabase();
    database = await openDatabase(
      fresh.url.startsWith('sqlite:') ? { kind: 'sqlite', path: fresh.url.slice('sqlite:'.length) } : { kind: 'postgres', url: fresh.url, poolMax: 2 },
      { error: () => undefined },
    );
  });
  afterEach(async () => {
    await database.close();
    await fresh.drop();
  });

  const move = (task: Task, from: { state: Task['state']; version: number }, state: Task['state'], at: string) => commitStatements(database.db, [
    moveTaskStatement(database.db, task.id, from, { state, terminal: state !== 'working', result: undefined, updatedAt: at }),
    insertHistoryStatement(database.db, task.id, from.version + 1, { state, at, by: task.assigneeId, messageId: randomUUID() }),
    auditStatement(database.db, { event: 'task-updated', actorId: task.assigneeId, subjectId: task.id, detail: { from: from.state, to: state } }),
  ]);

  it('the first move from a version wins; a second from the same version is refused whole, the task as the first left it', async () => {
    const now = new Date().toISOString();
    const task: Task = {
      id: randomUUID(), kind: 'task', title: 't', requesterId: randomUUID(), assigneeId: randomUUID(), roomId: randomUUID(), queueId: null,
      leaseExpiresAt: null, attempts: 0, maxAttempts: 3, claim: 0,
      state: 'submitted', result: null, dueAt: null, createdAt: now, updatedAt: now, history: [{ state: 'submitted', at: now, by: null, messageId: null }],
    };
    await commitStatements(database.db, [insertTaskStatement(database.db, task, null), insertHistoryStatement(database.db, task.id, 0, task.history[0]!)]);

    const later = new Date(Date.now() + 1).toISOString();
    await move(task, { state: 'submitted', version: 0 }, 'working', later);
    const lost = await move(task, { state: 'submitted', version: 0 }, 'canceled', new Date(Date.now() + 2).toISOString()).then(() => null, (err: unknown) => err);
    expect(isUniqueViolation(lost), String(lost)).toBe(true);

    const stored = await findTask(database.db, task.id);
    expect(stored?.version).toBe(1);
    expect(stored?.task.state).toBe('working');
    expect(stored?.task.updatedAt).toBe(later);
    expect(stored?.task.history.map((h) => h.state)).toEqual(['submitted', 'working']);
    expect((await listAudit(database.db, 'task-updated')).filter((r) => r.subjectId === task.id)).toHaveLength(1);

    // The next move from the version the winner made goes through.
    await move(task, { state: 'working', version: 1 }, 'completed', new Date(Date.now() + 3).toISOString());
    expect((await findTask(database.db, task.id))?.task.history.map((h) => h.state)).toEqual(['submitted', 'working', 'completed']);
  });
});
