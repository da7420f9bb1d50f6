import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';
import type { Payload } from '../helpers/ws.js';

// docs/tasks.md, "Queues", across two nodes on one database: claims racing on both nodes have one
// winner; a claim held on one node is answered by a task created on the other; a task whose
// claimer's node died comes back once, swept by the node still up. Short leases through the
// test-only AMS_TEST_MIN_LEASE_SECONDS (its config field).

const available = await servicesAvailable('task queues across nodes', ['redis']);

describe.runIf(available)('task queues across two nodes', () => {
  let cluster: TestNodes;
  let onA: Api;
  let onB: Api;
  let requester: TestAgent;
  let workers: TestAgent[];
  let queueId: string;
  let nodeAClosed = false;

  beforeAll(async () => {
    cluster = await startTestNodes(2, { config: { testMinLeaseSeconds: 1 } });
    [onA, onB] = cluster.nodes.map((node) => new Api(node.url)) as [Api, Api];
    const admin = await newAdmin(onA);
    requester = await newAgent(onA);
    workers = await Promise.all(Array.from({ length: 6 }, () => newAgent(onA)));
    queueId = (await newRoom(onA, admin, [requester, ...workers])).id;
  });
  afterAll(async () => {
    if (!cluster) return;
    if (!nodeAClosed) return cluster.close();
    await cluster.nodes[1]!.close({ keepDatabase: true });
    await cluster.db.drop();
  });

  const queued = async (api: Api, title: string): Promise<Payload> => {
    const res = await api.post('/api/v1/tasks', { queue: queueId, title }, { jwt: requester.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };

  it('claims racing on two nodes: exactly one winner, the others 409 naming it', async () => {
    for (let round = 0; round < 3; round++) {
      const task = await queued(onA, `Race ${round}`);
      const answers = await Promise.all(workers.map((w, i) => (i % 2 === 0 ? onA : onB).post(`/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 60 }, { jwt: w.jwt })));
      const won = answers.filter((a) => a.status === 200);
      expect(won).toHaveLength(1);
      for (const lost of answers.filter((a) => a.status !== 200)) {
        expect(lost.status).toBe(409);
        expect(lost.body.details.assigneeId).toBe(won[0]!.body.assigneeId);
      }
      const now = (await onB.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body;
      expect(now).toMatchObject({ assigneeId: won[0]!.body.assigneeId, attempts: 1, claim: 1 });
      await onA.post(`/api/v1/tasks/${task.id}/state`, { state: 'canceled' }, { jwt: requester.jwt });
    }
  });

  it('a claim held on node A is answered by a task created on node B', async () => {
    const held = onA.post('/api/v1/tasks/claim', { queue: queueId, wait: 20 }, { jwt: workers[0]!.jwt });
    await waitUntil('the claim held on node A', () => cluster.nodes[0]!.app.ctx.taskWaiters.size === 1);
    const task = await queued(onB, 'Arrives on B');
    const got = await held;
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: task.id, assigneeId: workers[0]!.id });
    await onB.post(`/api/v1/tasks/${task.id}/state`, { state: 'canceled' }, { jwt: requester.jwt });
  });

  it('a worker gone with the node that granted its claim: the task comes back within the lease plus 5 s, once', async () => {
    const task = await queued(onA, 'Orphaned');
    const claimed = await onA.post(`/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 2 }, { jwt: workers[1]!.jwt });
    expect(claimed.status).toBe(200);
    const deadline = new Date(claimed.body.leaseExpiresAt).getTime() + 5000;
    nodeAClosed = true;
    await cluster.nodes[0]!.close({ keepDatabase: true });
    await waitUntil('the task is back in the queue', async () => (await onB.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body.assigneeId === null, 15_000, 100);
    expect(Date.now()).toBeLessThan(deadline);
    const back = (await onB.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body;
    expect(back.history.filter((h: Payload) => h.reason === 'lease-expired')).toEqual([{ state: 'submitted', by: null, reason: 'lease-expired', at: expect.any(String), messageId: expect.any(String) }]);
    const late = await onB.post(`/api/v1/tasks/${task.id}/heartbeat`, {}, { jwt: workers[1]!.jwt });
    expect(late.status).toBe(409);
  });
});
