import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/mcp.md, the task tools: the same service as /api/v1/tasks (docs/tasks.md).

describe('MCP task tools', () => {
  const t = useTestServer();
  const clients: Client[] = [];
  afterAll(async () => { for (const c of clients) await c.close(); });
  const mcpOf = async (jwt: string): Promise<Client> => {
    const client = await connectMcp(t.server.url, jwt);
    clients.push(client);
    return client;
  };

  it('create_task by name, list_tasks, update_task, get_task with a wait', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const a = await mcpOf(alice.jwt);
    const b = await mcpOf(bob.jwt);
    const created = await callTool(a, 'create_task', { assignee: bob.name, title: 'Summarise', body: 'the logs', clientTaskId: 'm-1' });
    expect(created.isError).toBe(false);
    const task = created.data.task;
    expect(task).toMatchObject({ kind: 'task', state: 'submitted', requesterId: alice.id, assigneeId: bob.id });
    expect((await callTool(a, 'create_task', { assignee: bob.id, title: 'Summarise', clientTaskId: 'm-1' })).data.task.id).toBe(task.id);
    const listed = await callTool(b, 'list_tasks', { as: 'assignee', state: 'submitted' });
    expect(listed.data.tasks.map((x: { id: string }) => x.id)).toEqual([task.id]);
    const waiting = callTool(a, 'get_task', { taskId: task.id, wait_seconds: 10 });
    await waitUntil('the get_task waiter', () => t.server.app.ctx.taskWaiters.size > 0);
    expect((await callTool(b, 'update_task', { taskId: task.id, state: 'working', body: 'on it' })).data.task.state).toBe('working');
    expect((await waiting).data.task.state).toBe('working');
    const refused = await callTool(b, 'update_task', { taskId: task.id, state: 'rejected' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^CONFLICT/);
  });

  it('create_task with queue, claim_task (by id and the oldest, with a wait), heartbeat_task, list_tasks of a queue', async () => {
    const admin = await newAdmin(t.api);
    const [requester, w1, w2, outsider] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
    const room = await newRoom(t.api, admin, [requester, w1, w2]);
    const [r, a, b, o] = [await mcpOf(requester.jwt), await mcpOf(w1.jwt), await mcpOf(w2.jwt), await mcpOf(outsider.jwt)];
    const made = await callTool(r, 'create_task', { queue: room.slug, title: 'Index the files', maxAttempts: 2 });
    expect(made.isError).toBe(false);
    expect(made.data.task).toMatchObject({ assigneeId: null, queueId: room.id, maxAttempts: 2 });
    expect((await callTool(r, 'create_task', { title: 'Nobody' })).text).toMatch(/^VALIDATION_ERROR/);
    expect((await callTool(r, 'create_task', { queue: room.id, assignee: w1.id, title: 'Both' })).text).toMatch(/^VALIDATION_ERROR/);

    const claimed = await callTool(a, 'claim_task', { taskId: made.data.task.id, leaseSeconds: 60 });
    expect(claimed.data.task).toMatchObject({ assigneeId: w1.id, claim: 1 });
    const lost = await callTool(b, 'claim_task', { taskId: made.data.task.id });
    expect(lost.isError).toBe(true);
    expect(lost.text).toMatch(/^CONFLICT/);
    expect(lost.text).toContain(w1.id);
    expect((await callTool(o, 'claim_task', { taskId: made.data.task.id })).text).toMatch(/^NOT_FOUND/);
    expect((await callTool(a, 'claim_task', {})).text).toMatch(/^VALIDATION_ERROR/);
    expect((await callTool(a, 'claim_task', { queue: room.id, leaseSeconds: 5 })).text).toMatch(/^VALIDATION_ERROR/);
    expect((await callTool(a, 'heartbeat_task', { taskId: made.data.task.id, leaseSeconds: 120 })).data.task.assigneeId).toBe(w1.id);
    expect((await callTool(b, 'heartbeat_task', { taskId: made.data.task.id })).text).toMatch(/^CONFLICT/);

    expect((await callTool(b, 'claim_task', { queue: room.slug })).data.task).toBeNull();
    const waiting = callTool(b, 'claim_task', { queue: room.slug, wait_seconds: 15 });
    await waitUntil('the claim_task waiter', () => t.server.app.ctx.taskWaiters.size > 0);
    const next = await callTool(r, 'create_task', { queue: room.id, title: 'Second' });
    expect((await waiting).data.task).toMatchObject({ id: next.data.task.id, assigneeId: w2.id });
    const listed = await callTool(a, 'list_tasks', { queue: room.slug });
    expect(listed.data.tasks.map((x: { id: string }) => x.id).sort()).toEqual([made.data.task.id, next.data.task.id].sort());
  });

  it('request_approval waits for the decision in one call', async () => {
    const agent = await newAgent(t.api);
    const person = await newAgent(t.api);
    const asking = callTool(await mcpOf(agent.jwt), 'request_approval', { approver: person.name, title: 'May I deploy?', wait_seconds: 15 });
    let id = '';
    await waitUntil('the approval exists', async () => {
      const page = await t.api.get('/api/v1/tasks?as=assignee', { jwt: person.jwt });
      id = page.body.tasks[0]?.id ?? '';
      return id !== '';
    });
    const decided = await t.api.post(`/api/v1/tasks/${id}/state`, { state: 'completed', result: { decision: 'approved' } }, { jwt: person.jwt });
    expect(decided.status).toBe(200);
    const outcome = await asking;
    expect(outcome.data.task).toMatchObject({ id, kind: 'approval', state: 'completed', result: { decision: 'approved' } });
    // Without a decision, the wait ends with the approval still open.
    const open = await callTool(await mcpOf(agent.jwt), 'request_approval', { approver: person.id, title: 'Again?', wait_seconds: 0 });
    expect(open.data.task.state).toBe('submitted');
  });
});
