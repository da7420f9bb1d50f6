import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { DB } from '../../src/store/schema.js';
import { newAgent, type Api, type TestAgent } from '../helpers/api.js';
import { TEST_DIALECT } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { expectOneCommitEach, taskAndMessages } from '../helpers/tasks.js';

// docs/tasks.md, "A move is one commit": a task's move (or creation), its history entry, its audit
// record and its message are written in one transaction, the message's group commit. A failure of
// the task's statements, which run after the message's in that transaction, leaves neither. The
// failure is injected with a trigger on the audit record, the last statement of the move, so that
// everything else of the transaction (the message included) has run when it fails. On the suite's engine.

/** Makes the insert of the audit records of `event` whose `column` is `id` fail; returns its undoing. */
async function failAudit(db: Kysely<DB>, event: string, column: 'subject_id' | 'actor_id', id: string): Promise<() => Promise<void>> {
  // DDL takes no parameters: the values are checked instead (a UUID, a fixed event name).
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  expect(event).toMatch(/^[a-z-]+$/);
  if (TEST_DIALECT === 'sqlite') {
    await sql.raw(`create trigger ams_test_fail before insert on audit_log when new.event = '${event}' and new.${column} = '${id}' begin select raise(abort, 'injected failure'); end`).execute(db);
    return async () => {
      await sql.raw('drop trigger ams_test_fail').execute(db);
    };
  }
  await sql.raw(`create function ams_test_fail() returns trigger language plpgsql as $$ begin
    if new.event = '${event}' and new.${column}::text = '${id}' then raise exception 'injected failure'; end if;
    return new; end $$`).execute(db);
  await sql.raw('create trigger ams_test_fail before insert on audit_log for each row execute function ams_test_fail()').execute(db);
  return async () => {
    await sql.raw('drop trigger ams_test_fail on audit_log').execute(db);
    await sql.raw('drop function ams_test_fail()').execute(db);
  };
}

const create = (api: Api, caller: TestAgent, body: Record<string, unknown>) => api.post('/api/v1/tasks', body, { jwt: caller.jwt });
const move = (api: Api, caller: TestAgent, id: string, body: Record<string, unknown>) => api.post(`/api/v1/tasks/${id}/state`, body, { jwt: caller.jwt });

describe(`a task's move and its message are one commit (${TEST_DIALECT})`, () => {
  const t = useTestServer();
  const db = (): Kysely<DB> => t.server.app.ctx.database.db;
  const auditOf = async (event: string, subjectId: string): Promise<number> =>
    (await db().selectFrom('audit_log').select('id').where('event', '=', event).where('subject_id', '=', subjectId).execute()).length;

  it('a move whose own statements fail after its message was written leaves neither the move nor the message', async () => {
    const requester = await newAgent(t.api);
    const assignee = await newAgent(t.api);
    const created = await create(t.api, requester, { assignee: assignee.id, title: 'Check the build' });
    expect(created.status).toBe(201);
    const taskId = created.body.id as string;
    const before = await taskAndMessages(t.api, requester, taskId);
    expectOneCommitEach(before);
    expect(before.messageIds).toHaveLength(1);

    const undo = await failAudit(db(), 'task-updated', 'subject_id', taskId);
    try {
      // The service itself: the injected error, not a response made of it.
      await expect(t.server.app.ctx.tasks.move({ agentId: assignee.id, role: 'agent' }, taskId, { state: 'working', message: { body: 'On it' } }))
        .rejects.toThrow(/injected failure/);
    } finally {
      await undo();
    }
    const after = await taskAndMessages(t.api, requester, taskId);
    expect(after.task).toEqual(before.task);
    expect(after.messageIds).toEqual(before.messageIds);
    expect((await t.api.get(`/api/v1/rooms/${before.task.roomId}/messages`, { jwt: requester.jwt })).body.messages.map((m: { body: string }) => m.body)).not.toContain('On it');
    expect(await auditOf('task-updated', taskId)).toBe(0);

    // Nothing of it is left in the way: the same move now goes through, with its message.
    const moved = await move(t.api, assignee, taskId, { state: 'working', message: { body: 'On it' } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const done = await taskAndMessages(t.api, requester, taskId);
    expectOneCommitEach(done);
    expect(done.task.history.map((h) => h.state)).toEqual(['submitted', 'working']);
    expect(await auditOf('task-updated', taskId)).toBe(1);
  });

  it('a move whose message is refused by the database leaves no move either (no history entry naming a message that never exists)', async () => {
    const requester = await newAgent(t.api);
    const assignee = await newAgent(t.api);
    const created = await create(t.api, requester, { assignee: assignee.id, title: 'Deploy' });
    const taskId = created.body.id as string;
    const before = await taskAndMessages(t.api, requester, taskId);

    // The message's own writes fail (its audit record, by its sender), after they were prepared.
    const undo = await failAudit(db(), 'message-sent', 'actor_id', assignee.id);
    try {
      await expect(t.server.app.ctx.tasks.move({ agentId: assignee.id, role: 'agent' }, taskId, { state: 'completed', result: { ok: true } }))
        .rejects.toThrow(/injected failure/);
    } finally {
      await undo();
    }
    const after = await taskAndMessages(t.api, requester, taskId);
    expect(after.task).toEqual(before.task);
    expectOneCommitEach(after);
    expect(await auditOf('task-updated', taskId)).toBe(0);
    expect((await move(t.api, assignee, taskId, { state: 'completed', result: { ok: true } })).status).toBe(200);
    expectOneCommitEach(await taskAndMessages(t.api, requester, taskId));
  });

  it('a creation whose message is refused by the database leaves no task', async () => {
    const requester = await newAgent(t.api);
    const assignee = await newAgent(t.api);
    const undo = await failAudit(db(), 'message-sent', 'actor_id', requester.id);
    try {
      await expect(t.server.app.ctx.tasks.create({ agentId: requester.id, role: 'agent' }, { assignee: assignee.id, title: 'Lost', input: { body: 'never stored' } }))
        .rejects.toThrow(/injected failure/);
    } finally {
      await undo();
    }
    expect((await t.api.get('/api/v1/tasks?as=requester', { jwt: requester.jwt })).body.tasks).toEqual([]);

    const created = await create(t.api, requester, { assignee: assignee.id, title: 'Kept', input: { body: 'stored' } });
    expect(created.status).toBe(201);
    // The direct room of the two (opened by the failed creation already) holds the second creation's message alone.
    const page = await t.api.get(`/api/v1/rooms/${created.body.roomId}/messages`, { jwt: requester.jwt });
    expect(page.body.messages.map((m: { body: string }) => m.body)).toEqual(['stored']);
    expectOneCommitEach(await taskAndMessages(t.api, requester, created.body.id));
  });

  it('racing moves: the refused one leaves no message, whichever wins', async () => {
    const requester = await newAgent(t.api);
    const assignee = await newAgent(t.api);
    for (let round = 0; round < 5; round++) {
      const created = await create(t.api, requester, { assignee: assignee.id, title: `Race ${round}` });
      const taskId = created.body.id as string;
      expect((await move(t.api, assignee, taskId, { state: 'working' })).status).toBe(200);
      const [done, canceled] = await Promise.all([
        move(t.api, assignee, taskId, { state: 'completed', message: { body: `completed ${round}` } }),
        move(t.api, requester, taskId, { state: 'canceled', message: { body: `canceled ${round}` } }),
      ]);
      expect([done.status, canceled.status].sort()).toEqual([200, 409]);
      const now = await taskAndMessages(t.api, requester, taskId);
      expectOneCommitEach(now);
      expect(now.messageIds).toHaveLength(3);
      const bodies = (await t.api.get(`/api/v1/rooms/${now.task.roomId}/messages?limit=100`, { jwt: requester.jwt })).body.messages.map((m: { body: string }) => m.body);
      const loser = done.status === 409 ? `completed ${round}` : `canceled ${round}`;
      expect(bodies).not.toContain(loser);
      expect(await auditOf('task-updated', taskId)).toBe(2);
    }
  });
});
