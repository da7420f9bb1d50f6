import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

// docs/tasks.md, webhooks: `task.updated` to the other side's endpoints listing it, `data: {task}`.

describe('task.updated webhooks', () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [1, 1], allowPrivateTargets: true } } });
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(() => receiver.close());

  it('the assignee\'s endpoint gets the creation, the requester\'s the move; an endpoint without the event gets none', async () => {
    const requester = await newAgent(t.api);
    const assignee = await newAgent(t.api);
    const bystander = await newAgent(t.api);
    const hook = (agent: typeof requester, path: string, events: string[]) =>
      t.api.post(`/api/v1/agents/${agent.id}/webhooks`, { url: `${receiver.url}/${path}`, events, mode: 'always' }, { jwt: agent.jwt });
    expect((await hook(assignee, 'assignee', ['task.updated'])).status).toBe(201);
    expect((await hook(requester, 'requester', ['task.updated'])).status).toBe(201);
    expect((await hook(bystander, 'bystander', ['message.created'])).status).toBe(201);
    const task = (await t.api.post('/api/v1/tasks', { assignee: assignee.id, title: 'Hooked' }, { jwt: requester.jwt })).body;
    await t.api.post(`/api/v1/tasks/${task.id}/state`, { state: 'working' }, { jwt: assignee.jwt });
    const bodies = (path: string) => receiver.received.filter((r) => r.path === `/${path}`).map((r) => JSON.parse(r.body));
    await waitUntil('both deliveries', () => bodies('assignee').length >= 1 && bodies('requester').length >= 1);
    expect(bodies('assignee')[0]).toMatchObject({ type: 'task.updated', data: { task: { id: task.id } } });
    expect(bodies('requester')[0]).toMatchObject({ type: 'task.updated', data: { task: { id: task.id, state: 'working' } } });
    expect(bodies('bystander')).toEqual([]);
  });
});
