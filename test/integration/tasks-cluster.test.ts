import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAgent, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, waitFor, type Payload } from '../helpers/ws.js';

// docs/tasks.md across two nodes: a move on node B wakes a request held on node A (the bus's
// `task.updated`), task:updated reaches the sockets on both nodes, an expiry happens once.

const available = await servicesAvailable('tasks across nodes', ['redis']);

describe.runIf(available)('tasks across two nodes', () => {
  let cluster: TestNodes;
  let onA: Api;
  let onB: Api;
  let requester: TestAgent;
  let assignee: TestAgent;

  beforeAll(async () => {
    cluster = await startTestNodes(2);
    [onA, onB] = cluster.nodes.map((node) => new Api(node.url)) as [Api, Api];
    [requester, assignee] = [await newAgent(onA), await newAgent(onA)];
  });
  afterAll(() => cluster?.close());

  it('a move on node B answers GET /api/v1/tasks/:id?wait= held on node A, and a list wait too', async () => {
    const task = (await onA.post('/api/v1/tasks', { assignee: assignee.id, title: 'Across' }, { jwt: requester.jwt })).body;
    const held = onA.get(`/api/v1/tasks/${task.id}?wait=20`, { jwt: requester.jwt });
    await waitUntil('the request held on node A', () => cluster.nodes[0]!.app.ctx.taskWaiters.size === 1);
    const at = Date.now();
    expect((await onB.post(`/api/v1/tasks/${task.id}/state`, { state: 'working' }, { jwt: assignee.jwt })).status).toBe(200);
    expect((await held).body.state).toBe('working');
    expect(Date.now() - at).toBeLessThan(5_000);

    const other = await newAgent(onA);
    const list = onA.get('/api/v1/tasks?as=assignee&state=submitted&wait=20', { jwt: other.jwt });
    await waitUntil('the list held on node A', () => cluster.nodes[0]!.app.ctx.taskWaiters.size === 1);
    const made = (await onB.post('/api/v1/tasks', { assignee: other.id, title: 'New' }, { jwt: requester.jwt })).body;
    expect(((await list).body.tasks as Payload[]).map((x) => x.id)).toEqual([made.id]);
  });

  it('task:updated reaches the requester\'s and the assignee\'s sockets on both nodes', async () => {
    const sockets = await Promise.all([
      connectReady(cluster.nodes[0]!.url, requester.jwt), connectReady(cluster.nodes[1]!.url, requester.jwt),
      connectReady(cluster.nodes[0]!.url, assignee.jwt), connectReady(cluster.nodes[1]!.url, assignee.jwt),
    ]);
    try {
      const seen = sockets.map(({ socket }) => waitFor(socket, 'task:updated', (e: Payload) => e.task.title === 'Everywhere'));
      await onB.post('/api/v1/tasks', { assignee: assignee.id, title: 'Everywhere' }, { jwt: requester.jwt });
      for (const event of await Promise.all(seen)) expect(event.task.state).toBe('submitted');
    } finally {
      for (const { socket } of sockets) socket.disconnect();
    }
  });

  it('a task past its dueAt fails once, with both nodes sweeping', async () => {
    const tasks = await Promise.all([0, 1, 2].map(async (i) =>
      (await (i % 2 === 0 ? onA : onB).post('/api/v1/tasks', { assignee: assignee.id, title: `Expiring ${i}`, dueAt: new Date(Date.now() + 1200).toISOString() }, { jwt: requester.jwt })).body));
    await waitUntil('the tasks expire', async () => {
      const states = await Promise.all(tasks.map(async (task) => (await onA.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body.state));
      return states.every((s) => s === 'failed');
    }, 10_000, 200);
    for (const task of tasks) {
      const now = (await onB.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body;
      expect(now.history.map((h: Payload) => h.state)).toEqual(['submitted', 'failed']);
      const messages = (await onA.get(`/api/v1/rooms/${task.roomId}/messages`, { jwt: requester.jwt })).body.messages as Payload[];
      expect(messages.filter((m) => m.task?.id === task.id && m.task.state === 'failed')).toHaveLength(1);
    }
  });
});
