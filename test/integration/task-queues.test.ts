import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type Api, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, waitFor, type Payload } from '../helpers/ws.js';

// docs/tasks.md, "Queues": queued tasks, claims, leases on them and their expiry, on the suite's
// engine (AMS_TEST_DATABASE). The test-only AMS_TEST_MIN_LEASE_SECONDS (here its config field)
// allows 1-second leases, so that expiry takes seconds.

const t = useTestServer({ config: { testMinLeaseSeconds: 1 } });

interface Queue { requester: TestAgent; workers: TestAgent[]; outsider: TestAgent; queueId: string }

async function newQueue(api: Api, workers = 2): Promise<Queue> {
  const admin = await newAdmin(api);
  const requester = await newAgent(api);
  const members = await Promise.all(Array.from({ length: workers }, () => newAgent(api)));
  const room = await newRoom(api, admin, [requester, ...members]);
  return { requester, workers: members, outsider: await newAgent(api), queueId: room.id };
}

const post = (caller: TestAgent, path: string, body: Record<string, unknown> = {}) => t.api.post(path, body, { jwt: caller.jwt });

async function queued(q: Queue, extra: Record<string, unknown> = {}): Promise<Payload> {
  const res = await post(q.requester, '/api/v1/tasks', { queue: q.queueId, title: 'Build the docs', ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const read = async (caller: TestAgent, id: string): Promise<Payload> => {
  const res = await t.api.get(`/api/v1/tasks/${id}`, { jwt: caller.jwt });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

describe('queued tasks', () => {
  it('is created unassigned in its queue, with the queue fields; assignee and queue both or neither is 400', async () => {
    const q = await newQueue(t.api);
    const task = await queued(q, { maxAttempts: 2 });
    expect(task).toMatchObject({ state: 'submitted', assigneeId: null, queueId: q.queueId, roomId: q.queueId, leaseExpiresAt: null, attempts: 0, maxAttempts: 2, claim: 0 });
    expect((await queued(q)).maxAttempts).toBe(3);

    const both = await post(q.requester, '/api/v1/tasks', { queue: q.queueId, assignee: q.workers[0]!.id, title: 'x' });
    expect(both.status).toBe(400);
    expect(Object.keys(both.body.details)).toEqual(expect.arrayContaining(['assignee', 'queue']));
    const neither = await post(q.requester, '/api/v1/tasks', { title: 'x' });
    expect(neither.status).toBe(400);
    expect(neither.body.details).toHaveProperty('assignee');
    for (const maxAttempts of [0, 11, 2.5, '3']) {
      const bad = await post(q.requester, '/api/v1/tasks', { queue: q.queueId, title: 'x', maxAttempts });
      expect(bad.status, String(maxAttempts)).toBe(400);
      expect(bad.body.details).toHaveProperty('maxAttempts');
    }
    const notMember = await post(q.outsider, '/api/v1/tasks', { queue: q.queueId, title: 'x' });
    expect(notMember.status).toBe(400);
    expect(notMember.body.details).toHaveProperty('queue');
    const unknown = await post(q.requester, '/api/v1/tasks', { queue: '01890000-0000-7000-8000-000000000000', title: 'x' });
    expect(unknown.status).toBe(404);
    // Earlier tasks (with an assignee) carry the new fields too.
    const direct = await post(q.requester, '/api/v1/tasks', { assignee: q.workers[0]!.id, title: 'direct' });
    expect(direct.body).toMatchObject({ queueId: null, leaseExpiresAt: null, attempts: 0, claim: 0 });
  });

  it('one claim wins among many at once; the others are 409 naming the winner', async () => {
    const q = await newQueue(t.api, 6);
    const task = await queued(q);
    const answers = await Promise.all(q.workers.map((w) => post(w, `/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 60 })));
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    const winner = won[0]!.body;
    expect(winner).toMatchObject({ state: 'submitted', attempts: 1, claim: 1 });
    expect(q.workers.map((w) => w.id)).toContain(winner.assigneeId);
    expect(new Date(winner.leaseExpiresAt).getTime()).toBeGreaterThan(Date.now() + 50_000);
    for (const lost of answers.filter((a) => a.status !== 200)) {
      expect(lost.status).toBe(409);
      expect(lost.body.details.assigneeId).toBe(winner.assigneeId);
    }
    const now = await read(q.requester, task.id);
    expect(now.history.filter((h: Payload) => h.reason === 'claimed')).toHaveLength(1);
    expect(now.assigneeId).toBe(winner.assigneeId);
  });

  it('refuses bad leases, outsiders, the requester, and tasks that are not queued', async () => {
    const q = await newQueue(t.api);
    const task = await queued(q);
    for (const leaseSeconds of [0, 3601, 1.5, '60', -1]) {
      const bad = await post(q.workers[0]!, `/api/v1/tasks/${task.id}/claim`, { leaseSeconds });
      expect(bad.status, String(leaseSeconds)).toBe(400);
      expect(bad.body.details).toHaveProperty('leaseSeconds');
    }
    expect((await post(q.outsider, `/api/v1/tasks/${task.id}/claim`)).status).toBe(404);
    expect((await post(q.requester, `/api/v1/tasks/${task.id}/claim`)).status).toBe(403);
    const direct = (await post(q.requester, '/api/v1/tasks', { assignee: q.workers[0]!.id, title: 'direct' })).body;
    expect((await post(q.workers[0]!, `/api/v1/tasks/${direct.id}/claim`)).status).toBe(409);
    expect((await post(q.workers[0]!, '/api/v1/tasks/claim', { queue: q.queueId, wait: 31 })).status).toBe(400);
    expect((await post(q.outsider, '/api/v1/tasks/claim', { queue: q.queueId })).status).toBe(403);
    expect((await post(q.workers[0]!, '/api/v1/tasks/claim', {})).body.details).toHaveProperty('queue');
  });

  it('claims the oldest first, each task once among concurrent claimers; 204 when none', async () => {
    const q = await newQueue(t.api, 5);
    const tasks = [];
    for (let i = 0; i < 3; i++) tasks.push(await queued(q, { title: `job ${i}` }));
    const first = await post(q.workers[0]!, '/api/v1/tasks/claim', { queue: q.queueId });
    expect(first.status).toBe(200);
    expect(first.body.id).toBe(tasks[0]!.id);
    const answers = await Promise.all(q.workers.slice(1).map((w) => post(w, '/api/v1/tasks/claim', { queue: q.queueId })));
    const claimed = answers.filter((a) => a.status === 200).map((a) => a.body.id as string);
    expect(claimed.sort()).toEqual([tasks[1]!.id, tasks[2]!.id].sort());
    expect(answers.filter((a) => a.status === 204)).toHaveLength(2);
    expect((await post(q.workers[0]!, '/api/v1/tasks/claim', { queue: q.queueId })).status).toBe(204);
  });

  it('a claim with wait is held until a task comes, and answers 204 when none does', async () => {
    const q = await newQueue(t.api);
    const started = Date.now();
    const empty = await post(q.workers[0]!, '/api/v1/tasks/claim', { queue: q.queueId, wait: 1 });
    expect(empty.status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const held = post(q.workers[0]!, '/api/v1/tasks/claim', { queue: q.queueId, wait: 20 });
    await waitUntil('the claim is held', () => t.server.app.ctx.taskWaiters.size === 1);
    const task = await queued(q);
    const got = await held;
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: task.id, assigneeId: q.workers[0]!.id });
  });

  it('moves and heartbeats renew the lease; a lease that runs out puts the task back once, then the former claimer is refused', async () => {
    const q = await newQueue(t.api);
    const [w1, w2] = q.workers as [TestAgent, TestAgent];
    const task = await queued(q);
    const claimed = (await post(w1, `/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 30 })).body;
    const moved = await post(w1, `/api/v1/tasks/${task.id}/state`, { state: 'working' });
    expect(moved.status).toBe(200);
    expect(moved.body.leaseExpiresAt >= claimed.leaseExpiresAt).toBe(true);
    const beat = await post(w1, `/api/v1/tasks/${task.id}/heartbeat`, { leaseSeconds: 2 });
    expect(beat.status).toBe(200);
    expect(new Date(beat.body.leaseExpiresAt).getTime()).toBeLessThan(Date.now() + 2500);
    expect((await post(w2, `/api/v1/tasks/${task.id}/heartbeat`)).status).toBe(409);
    expect((await post(w1, `/api/v1/tasks/${task.id}/heartbeat`, { leaseSeconds: 0 })).status).toBe(400);

    const ranOut = Date.now() + 2000;
    await waitUntil('the lease runs out', async () => (await read(q.requester, task.id)).assigneeId === null, 10_000, 100);
    expect(Date.now()).toBeLessThan(ranOut + 5000);
    const back = await read(q.requester, task.id);
    expect(back).toMatchObject({ state: 'submitted', assigneeId: null, leaseExpiresAt: null, attempts: 1, claim: 1 });
    expect(back.history.at(-1)).toMatchObject({ state: 'submitted', by: null, reason: 'lease-expired' });
    expect(back.history.filter((h: Payload) => h.reason === 'lease-expired')).toHaveLength(1);

    const late = await post(w1, `/api/v1/tasks/${task.id}/heartbeat`);
    expect(late.status).toBe(409);
    expect(late.body.details.assigneeId).toBeNull();
    expect((await post(w1, `/api/v1/tasks/${task.id}/state`, { state: 'completed' })).status).toBe(409);

    const again = await post(w2, `/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 60 });
    expect(again.body).toMatchObject({ assigneeId: w2.id, attempts: 2, claim: 2 });
    const stale = await post(w1, `/api/v1/tasks/${task.id}/heartbeat`);
    expect(stale.status).toBe(409);
    expect(stale.body.details.assigneeId).toBe(w2.id);
    const done = await post(w2, `/api/v1/tasks/${task.id}/state`, { state: 'completed', result: { ok: true } });
    expect(done.body).toMatchObject({ state: 'completed', leaseExpiresAt: null });
  });

  it('fails the task once its attempts are used up', async () => {
    const q = await newQueue(t.api);
    const task = await queued(q, { maxAttempts: 1 });
    expect((await post(q.workers[0]!, `/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 1 })).status).toBe(200);
    await waitUntil('the task fails', async () => (await read(q.requester, task.id)).state === 'failed', 10_000, 100);
    const failed = await read(q.requester, task.id);
    expect(failed.result).toEqual({ reason: 'attempts-exhausted' });
    expect(failed.leaseExpiresAt).toBeNull();
    expect(failed.history.map((h: Payload) => h.state)).toEqual(['submitted', 'submitted', 'failed']);
  });

  it('lists a queue\'s tasks for its members, and waits for them', async () => {
    const q = await newQueue(t.api);
    const task = await queued(q);
    const page = await t.api.get(`/api/v1/tasks?queue=${q.queueId}&state=submitted`, { jwt: q.workers[0]!.jwt });
    expect(page.status).toBe(200);
    expect(page.body.tasks.map((x: Payload) => x.id)).toEqual([task.id]);
    expect((await t.api.get(`/api/v1/tasks?queue=${q.queueId}`, { jwt: q.outsider.jwt })).status).toBe(403);
    expect((await t.api.get('/api/v1/tasks?queue=nope', { jwt: q.workers[0]!.jwt })).status).toBe(400);
    // Members read the queue's tasks one by one too.
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: q.workers[1]!.jwt })).status).toBe(200);

    const held = t.api.get(`/api/v1/tasks?queue=${q.queueId}&state=working&wait=20`, { jwt: q.workers[1]!.jwt });
    await waitUntil('the list is held', () => t.server.app.ctx.taskWaiters.size === 1);
    await post(q.workers[0]!, `/api/v1/tasks/${task.id}/claim`);
    await post(q.workers[0]!, `/api/v1/tasks/${task.id}/state`, { state: 'working' });
    expect((await held).body.tasks.map((x: Payload) => x.state)).toEqual(['working']);
  });

  it('task:updated reaches every member of the queue room', async () => {
    const q = await newQueue(t.api, 2);
    const { socket } = await connectReady(t.server.url, q.workers[1]!.jwt);
    try {
      const created = waitFor(socket, 'task:updated', (e: Payload) => e.task.title === 'Announced' && e.task.assigneeId === null);
      const task = await queued(q, { title: 'Announced' });
      expect((await created).task.queueId).toBe(q.queueId);
      const claimed = waitFor(socket, 'task:updated', (e: Payload) => e.task.id === task.id && e.task.assigneeId === q.workers[0]!.id);
      await post(q.workers[0]!, `/api/v1/tasks/${task.id}/claim`);
      expect((await claimed).task.claim).toBe(1);
    } finally {
      socket.disconnect();
    }
  });
});
