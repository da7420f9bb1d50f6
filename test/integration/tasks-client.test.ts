import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmsClient, type Task } from '@agent-messaging/client';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { ensureBuilt } from '../helpers/build.js';
import { runAms, type CliResult } from '../helpers/cli.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/tasks.md through the client library (taskUpdated included) and `ams tasks`, `task`, `approve`, `deny`.

describe('tasks in the client library and ams', { timeout: 120_000 }, () => {
  const t = useTestServer();
  let alice: TestAgent;
  let bob: TestAgent;
  const clients: AmsClient[] = [];
  beforeAll(async () => {
    await ensureBuilt();
    [alice, bob] = await Promise.all([newAgent(t.api), newAgent(t.api)]);
  }, 180_000);
  afterAll(async () => {
    for (const client of clients) await client.close();
  });
  const ams = (token: string, ...args: string[]): Promise<CliResult> => runAms({ AMS_URL: t.server.url, AMS_API_TOKEN: token }, ...args);

  it('createTask, taskUpdated, moveTask, task with a wait, tasks', async () => {
    const a = new AmsClient({ url: t.server.url, apiToken: alice.apiToken });
    const b = new AmsClient({ url: t.server.url, apiToken: bob.apiToken });
    clients.push(a, b);
    await b.connect();
    const seen: Task[] = [];
    b.on('taskUpdated', ({ task }) => seen.push(task));
    const task = await a.createTask({ assignee: bob.id, title: 'Client task' });
    await waitUntil('bob sees the task', () => seen.some((x) => x.id === task.id));
    const waiting = a.task(task.id, { wait: 10 });
    await waitUntil('the wait is held', () => t.server.app.ctx.taskWaiters.size > 0);
    await b.moveTask(task.id, { state: 'working' });
    expect((await waiting).state).toBe('working');
    expect((await b.tasks({ as: 'assignee', state: ['working'] })).tasks.map((x) => x.id)).toContain(task.id);
  });

  it('ams task create, tasks, task, approve and deny', async () => {
    const made = await ams(alice.apiToken, 'task', 'create', bob.name, 'May', 'I', 'deploy?', '--kind', 'approval', '--json');
    expect(made.code, made.stderr).toBe(0);
    const approval = JSON.parse(made.stdout) as Task;
    expect(approval).toMatchObject({ kind: 'approval', title: 'May I deploy?', state: 'submitted' });
    const listed = await ams(bob.apiToken, 'tasks', '--as', 'assignee');
    expect(listed.stdout).toContain(approval.id);
    const approved = await ams(bob.apiToken, 'approve', approval.id, '--comment', 'go ahead');
    expect(approved.code, approved.stderr).toBe(0);
    const shown = await ams(alice.apiToken, 'task', approval.id, '--json');
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'completed', result: { decision: 'approved', comment: 'go ahead' } });
    const second = JSON.parse((await ams(alice.apiToken, 'task', 'create', bob.id, 'Again?', '--kind', 'approval', '--json')).stdout) as Task;
    expect((await ams(bob.apiToken, 'deny', second.id)).code).toBe(0);
    expect((await t.api.get(`/api/v1/tasks/${second.id}`, { jwt: alice.jwt })).body.result).toEqual({ decision: 'denied' });
    // A move not in the table: exit 1 with the 409's message.
    const refused = await ams(bob.apiToken, 'task', 'move', second.id, 'working');
    expect(refused.code).toBe(1);
  });
});
