import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type Api, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { untilPast, waitUntil } from '../helpers/wait.js';
import { connectReady, waitFor, type Payload } from '../helpers/ws.js';

// docs/tasks.md: tasks and approvals over REST, on the suite's engine (AMS_TEST_DATABASE).

const STATES = ['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled', 'rejected'] as const;
type State = (typeof STATES)[number];
type Side = 'requester' | 'assignee';

/** The transition table (docs/tasks.md), as the test states it independently of the service. */
const ALLOWED: Record<Side, Partial<Record<State, State[]>>> = {
  assignee: { submitted: ['working', 'rejected', 'completed', 'failed'], working: ['input-required', 'completed', 'failed'], 'input-required': ['working', 'completed', 'failed'] },
  requester: { submitted: ['canceled'], working: ['canceled'], 'input-required': ['working', 'canceled'] },
};
/** How a task reaches each state from `submitted`. */
const PATH: Record<State, [Side, State][]> = {
  submitted: [],
  working: [['assignee', 'working']],
  'input-required': [['assignee', 'working'], ['assignee', 'input-required']],
  completed: [['assignee', 'completed']],
  failed: [['assignee', 'failed']],
  canceled: [['requester', 'canceled']],
  rejected: [['assignee', 'rejected']],
};

interface Pair { requester: TestAgent; assignee: TestAgent }

const create = (api: Api, caller: TestAgent, body: Record<string, unknown>) => api.post('/api/v1/tasks', body, { jwt: caller.jwt });
const move = (api: Api, caller: TestAgent, id: string, body: Record<string, unknown>) => api.post(`/api/v1/tasks/${id}/state`, body, { jwt: caller.jwt });

async function newTask(api: Api, pair: Pair, extra: Record<string, unknown> = {}): Promise<Payload> {
  const res = await create(api, pair.requester, { assignee: pair.assignee.id, title: 'Review the patch', ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function taskIn(api: Api, pair: Pair, state: State): Promise<Payload> {
  let task = await newTask(api, pair);
  for (const [side, to] of PATH[state]) {
    const res = await move(api, pair[side], task.id, { state: to });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    task = res.body;
  }
  expect(task.state).toBe(state);
  return task;
}

describe('tasks', () => {
  const t = useTestServer();
  const pair = async (): Promise<Pair> => ({ requester: await newAgent(t.api), assignee: await newAgent(t.api) });

  it('creates a task in the direct room of the two: 201, its message carries task and is for the assignee\'s attention', async () => {
    const p = await pair();
    const res = await create(t.api, p.requester, { assignee: p.assignee.id, title: 'Summarise the logs', input: { body: 'Please summarise' } });
    expect(res.status).toBe(201);
    const task = res.body;
    expect(task).toEqual({
      id: expect.any(String), kind: 'task', title: 'Summarise the logs', requesterId: p.requester.id, assigneeId: p.assignee.id, roomId: expect.any(String),
      state: 'submitted', result: null, dueAt: null, createdAt: expect.any(String), updatedAt: task.createdAt,
      queueId: null, leaseExpiresAt: null, attempts: 0, maxAttempts: 3, claim: 0,
      history: [{ state: 'submitted', at: task.createdAt, by: p.requester.id, messageId: expect.any(String) }],
    });
    const direct = await t.api.post('/api/v1/direct-rooms', { agentId: p.assignee.id }, { jwt: p.requester.jwt });
    expect(direct.body.id).toBe(task.roomId);
    const history = await t.api.get(`/api/v1/rooms/${task.roomId}/messages`, { jwt: p.assignee.jwt });
    const message = (history.body.messages as Payload[]).find((m) => m.id === task.history[0].messageId);
    expect(message).toMatchObject({ senderId: p.requester.id, body: 'Please summarise', task: { id: task.id, kind: 'task', title: 'Summarise the logs', state: 'submitted' } });
    const inbox = await t.api.get('/api/v1/inbox?filter=attention', { jwt: p.assignee.jwt });
    expect((inbox.body.messages as Payload[]).map((m) => m.id)).toContain(message.id);
    // A move by the assignee posts its own message, with the state that move set; the first keeps its own.
    const moved = await move(t.api, p.assignee, task.id, { state: 'working' });
    const after = await t.api.get(`/api/v1/rooms/${task.roomId}/messages`, { jwt: p.requester.jwt });
    const byId = new Map((after.body.messages as Payload[]).map((m) => [m.id, m]));
    expect(byId.get(moved.body.history[1].messageId)).toMatchObject({ senderId: p.assignee.id, body: 'Task "Summarise the logs" is now working', task: { id: task.id, state: 'working' } });
    expect(byId.get(message.id).task.state).toBe('submitted');
    const audit = await t.server.app.ctx.database.db.selectFrom('audit_log').select('event').where('subject_id', '=', task.id).orderBy('created_at').execute();
    expect(audit.map((a) => a.event)).toEqual(['task-created', 'task-updated']);
  });

  it('the creation and a move carry data and attachments on their messages; bad ones are refused before the task is written', async () => {
    const p = await pair();
    const upload = await fetch(`${t.server.url}/api/v1/files?name=patch.diff`, { method: 'POST', headers: { authorization: `Bearer ${p.requester.jwt}`, 'content-type': 'text/x-diff' }, body: '--- a\n+++ b\n' });
    expect(upload.status).toBe(201);
    const file = (await upload.json()) as Payload;
    const task = await newTask(t.api, p, { input: { body: 'Review this', data: { lines: 2 }, attachments: [file.id] } });
    const page = await t.api.get(`/api/v1/rooms/${task.roomId}/messages`, { jwt: p.assignee.jwt });
    const first = (page.body.messages as Payload[]).find((m) => m.id === task.history[0].messageId);
    expect(first).toMatchObject({ data: { lines: 2 }, attachments: [{ id: file.id, name: 'patch.diff', size: 12 }] });
    // The assignee's file is its own to attach; the requester's is not (400, and the task stays where it was).
    const refused = await move(t.api, p.assignee, task.id, { state: 'working', message: { body: 'on it', attachments: [file.id] } });
    expect(refused.status).toBe(400);
    expect(refused.body.details).toHaveProperty(['message.attachments']);
    const badData = await move(t.api, p.assignee, task.id, { state: 'working', message: { body: 'on it', data: { deep: JSON.parse('['.repeat(20) + ']'.repeat(20)) } } });
    expect(badData.status).toBe(400);
    expect(badData.body.details).toHaveProperty(['message.data']);
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: p.requester.jwt })).body.state).toBe('submitted');
    const moved = await move(t.api, p.assignee, task.id, { state: 'completed', message: { body: 'done', data: { verdict: 'ok' } }, result: { ok: true } });
    expect(moved.status).toBe(200);
    const after = await t.api.get(`/api/v1/rooms/${task.roomId}/messages`, { jwt: p.requester.jwt });
    expect((after.body.messages as Payload[]).find((m) => m.id === moved.body.history[1].messageId)).toMatchObject({ body: 'done', data: { verdict: 'ok' }, attachments: [] });
    const createBad = await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x', input: { body: 'x', attachments: ['not-a-uuid'] } });
    expect(createBad.status).toBe(400);
    expect(Object.keys(createBad.body.details)[0]).toMatch(/^input\.attachments/);
  });

  it('a message sent without a task carries task: null', async () => {
    const p = await pair();
    const room = await t.api.post('/api/v1/direct-rooms', { agentId: p.assignee.id }, { jwt: p.requester.jwt });
    const sent = await t.api.post(`/api/v1/rooms/${room.body.id}/messages`, { body: 'hi' }, { jwt: p.requester.jwt });
    expect(sent.body.task).toBeNull();
  });

  for (const side of ['assignee', 'requester'] as const) {
    for (const from of STATES) {
      it(`the transition table: the ${side} from ${from}`, async () => {
        const p = await pair();
        for (const to of STATES) {
          const task = await taskIn(t.api, p, from);
          const res = await move(t.api, p[side], task.id, { state: to, message: { body: `to ${to}` } });
          if (ALLOWED[side][from]?.includes(to)) {
            expect(res.status, `${side} ${from} -> ${to}: ${JSON.stringify(res.body)}`).toBe(200);
            expect(res.body.state).toBe(to);
            expect(res.body.history.map((h: Payload) => h.state)).toEqual(['submitted', ...PATH[from].map(([, s]) => s), to]);
          } else {
            expect(res.status, `${side} ${from} -> ${to}`).toBe(409);
            expect(res.body.details).toEqual({ state: from });
          }
        }
      });
    }
  }

  it('refuses bad moves: 400 state, 404 stranger and unknown task, 403 admin, 400 the requester\'s answer without message', async () => {
    const p = await pair();
    const task = await taskIn(t.api, p, 'input-required');
    expect(await move(t.api, p.assignee, task.id, { state: 'done' })).toMatchObject({ status: 400, body: { details: { state: expect.any(String) } } });
    const stranger = await newAgent(t.api);
    expect((await move(t.api, stranger, task.id, { state: 'canceled' })).status).toBe(404);
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: stranger.jwt })).status).toBe(404);
    const admin = await newAdmin(t.api);
    expect((await move(t.api, admin, task.id, { state: 'canceled' })).status).toBe(403);
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: admin.jwt })).status).toBe(200);
    expect((await move(t.api, p.assignee, '00000000-0000-7000-8000-000000000000', { state: 'working' })).status).toBe(404);
    expect(await move(t.api, p.requester, task.id, { state: 'working' })).toMatchObject({ status: 400, body: { details: { message: expect.any(String) } } });
    // Only the assignee's moves carry a result: the requester's cancel or answer with one is refused, nothing moved.
    expect(await move(t.api, p.requester, task.id, { state: 'canceled', result: { reason: 'mine' } })).toMatchObject({ status: 400, body: { details: { result: expect.any(String) } } });
    expect(await move(t.api, p.requester, task.id, { state: 'working', message: { body: 'x' }, result: null })).toMatchObject({ status: 400, body: { details: { result: expect.any(String) } } });
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: p.requester.jwt })).body).toMatchObject({ state: 'input-required', result: null });
    const answered = await move(t.api, p.requester, task.id, { state: 'working', message: { body: 'Use the staging logs' } });
    expect(answered.status).toBe(200);
  });

  it('create refuses: assignee not a UUID, the caller, unknown, disabled; dueAt in the past; title too long', async () => {
    const p = await pair();
    expect(await create(t.api, p.requester, { assignee: 'bob', title: 'x' })).toMatchObject({ status: 400, body: { details: { assignee: expect.any(String) } } });
    expect(await create(t.api, p.requester, { assignee: p.requester.id, title: 'x' })).toMatchObject({ status: 400, body: { details: { assignee: expect.any(String) } } });
    expect((await create(t.api, p.requester, { assignee: '00000000-0000-7000-8000-000000000000', title: 'x' })).status).toBe(404);
    expect(await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x', dueAt: '2020-01-01T00:00:00Z' })).toMatchObject({ status: 400, body: { details: { dueAt: expect.any(String) } } });
    expect(await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x'.repeat(201) })).toMatchObject({ status: 400, body: { details: { title: expect.any(String) } } });
    expect(await create(t.api, p.requester, { assignee: p.assignee.id, title: '' })).toMatchObject({ status: 400, body: { details: { title: expect.any(String) } } });
    const admin = await newAdmin(t.api);
    expect((await t.api.post(`/api/v1/agents/${p.assignee.id}/disable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    expect((await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x' })).status).toBe(403);
  });

  it('room rules: a group room of both; 404 unknown room; 400 room when either is not a member or the room is direct', async () => {
    const p = await pair();
    const admin = await newAdmin(t.api);
    const both = await newRoom(t.api, admin, [p.requester, p.assignee]);
    const inGroup = await newTask(t.api, p, { room: both.id });
    expect(inGroup.roomId).toBe(both.id);
    const onlyOne = await newRoom(t.api, admin, [p.requester]);
    expect(await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x', room: onlyOne.id })).toMatchObject({ status: 400, body: { details: { room: expect.any(String) } } });
    expect((await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x', room: '00000000-0000-7000-8000-000000000000' })).status).toBe(404);
    const direct = await t.api.post('/api/v1/direct-rooms', { agentId: p.assignee.id }, { jwt: p.requester.jwt });
    expect(await create(t.api, p.requester, { assignee: p.assignee.id, title: 'x', room: direct.body.id })).toMatchObject({ status: 400, body: { details: { room: expect.any(String) } } });
  });

  it('a clientTaskId repeat answers 200 with the original task, concurrent repeats included', async () => {
    const p = await pair();
    const body = { assignee: p.assignee.id, title: 'Deploy', clientTaskId: 'deploy-1' };
    const [a, b] = await Promise.all([create(t.api, p.requester, body), create(t.api, p.requester, body)]);
    expect([a.status, b.status].sort()).toEqual([200, 201]);
    expect(a.body.id).toBe(b.body.id);
    expect(await create(t.api, p.requester, body)).toMatchObject({ status: 200, body: { id: a.body.id } });
    const count = await t.server.app.ctx.database.db.selectFrom('tasks').select('id').where('requester_id', '=', p.requester.id).execute();
    expect(count).toHaveLength(1);
  });

  it('approvals: completed only with result.decision approved or denied', async () => {
    const p = await pair();
    const task = await newTask(t.api, p, { kind: 'approval', title: 'May I deploy?' });
    expect(task.kind).toBe('approval');
    expect(await move(t.api, p.assignee, task.id, { state: 'completed' })).toMatchObject({ status: 400, body: { details: { 'result.decision': expect.any(String) } } });
    expect((await move(t.api, p.assignee, task.id, { state: 'completed', result: { decision: 'maybe' } })).status).toBe(400);
    const done = await move(t.api, p.assignee, task.id, { state: 'completed', result: { decision: 'approved', comment: 'go' }, message: { body: 'Approved: go' } });
    expect(done).toMatchObject({ status: 200, body: { state: 'completed', result: { decision: 'approved', comment: 'go' } } });
  });

  it('racing moves: the assignee completing while the requester cancels, exactly one wins and the history is consistent', async () => {
    const p = await pair();
    for (let round = 0; round < 5; round++) {
      const task = await taskIn(t.api, p, 'working');
      const [done, canceled] = await Promise.all([move(t.api, p.assignee, task.id, { state: 'completed' }), move(t.api, p.requester, task.id, { state: 'canceled' })]);
      expect([done.status, canceled.status].sort()).toEqual([200, 409]);
      const winner = done.status === 200 ? done.body : canceled.body;
      const now = (await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: p.requester.jwt })).body;
      expect(now.state).toBe(winner.state);
      expect(now.history.map((h: Payload) => h.state)).toEqual(['submitted', 'working', winner.state]);
      expect((done.status === 409 ? done : canceled).body.details).toEqual({ state: winner.state });
    }
  });

  it('GET with wait holds until the task changes; a terminal task answers at once', async () => {
    const p = await pair();
    const task = await newTask(t.api, p);
    const started = Date.now();
    const held = t.api.get(`/api/v1/tasks/${task.id}?wait=10`, { jwt: p.requester.jwt });
    await waitUntil('the waiter is registered', () => t.server.app.ctx.taskWaiters.size > 0);
    await move(t.api, p.assignee, task.id, { state: 'working' });
    const res = await held;
    expect(res.body.state).toBe('working');
    expect(Date.now() - started).toBeLessThan(8000);
    // changedAfter earlier than the last move: at once.
    expect((await t.api.get(`/api/v1/tasks/${task.id}?wait=10&changedAfter=${encodeURIComponent(task.createdAt)}`, { jwt: p.requester.jwt })).body.state).toBe('working');
    await move(t.api, p.assignee, task.id, { state: 'completed' });
    const at = Date.now();
    expect((await t.api.get(`/api/v1/tasks/${task.id}?wait=10`, { jwt: p.requester.jwt })).body.state).toBe('completed');
    expect(Date.now() - at).toBeLessThan(2000);
    expect((await t.api.get(`/api/v1/tasks/${task.id}?wait=31`, { jwt: p.requester.jwt })).status).toBe(400);
  });

  it('lists: as, state, cursor paging newest updatedAt first; bad as and state 400; wait for a new task', async () => {
    const p = await pair();
    const a = await newTask(t.api, p, { title: 'a' });
    const b = await newTask(t.api, p, { title: 'b' });
    const c = await newTask(t.api, p, { title: 'c' });
    await move(t.api, p.assignee, a.id, { state: 'working' });
    const list = (q: string, who: TestAgent) => t.api.get(`/api/v1/tasks${q}`, { jwt: who.jwt });
    const all = await list('', p.requester);
    expect((all.body.tasks as Payload[]).map((x) => x.id)).toEqual([a.id, c.id, b.id]);
    expect(all.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(((await list('?as=assignee', p.requester)).body.tasks as Payload[])).toEqual([]);
    expect(((await list('?as=assignee&state=submitted', p.assignee)).body.tasks as Payload[]).map((x) => x.id)).toEqual([c.id, b.id]);
    expect(((await list('?state=working,completed', p.assignee)).body.tasks as Payload[]).map((x) => x.id)).toEqual([a.id]);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Payload = (await list(`?limit=1${cursor ? `&cursor=${cursor}` : ''}`, p.requester)).body;
      seen.push(...(page.tasks as Payload[]).map((x) => x.id));
      cursor = page.nextCursor;
      expect(page.hasMore).toBe(cursor !== null);
    } while (cursor !== null);
    expect(seen).toEqual([a.id, c.id, b.id]);
    expect(await list('?as=boss', p.requester)).toMatchObject({ status: 400, body: { details: { as: expect.any(String) } } });
    expect(await list('?state=done', p.requester)).toMatchObject({ status: 400, body: { details: { state: expect.any(String) } } });
    expect(await list('?limit=101', p.requester)).toMatchObject({ status: 400 });
    expect(await list('?cursor=nonsense', p.requester)).toMatchObject({ status: 400, body: { details: { cursor: expect.any(String) } } });

    const q = await pair();
    const held = list('?as=assignee&state=submitted&wait=10', q.assignee);
    await waitUntil('the list waiter is registered', () => t.server.app.ctx.taskWaiters.size > 0);
    const made = await newTask(t.api, q);
    const woken = await held;
    expect((woken.body.tasks as Payload[]).map((x) => x.id)).toEqual([made.id]);
  });

  it('task:updated reaches every socket of the requester and the assignee', async () => {
    const p = await pair();
    const r = await connectReady(t.server.url, p.requester.jwt);
    const a = await connectReady(t.server.url, p.assignee.jwt);
    try {
      const seenByA = waitFor(a.socket, 'task:updated', (e: Payload) => e.task.title === 'Live');
      const seenByR = waitFor(r.socket, 'task:updated', (e: Payload) => e.task.title === 'Live');
      const task = await newTask(t.api, p, { title: 'Live' });
      expect((await seenByA).task).toEqual(task);
      expect((await seenByR).task.id).toBe(task.id);
      const movedSeen = waitFor(r.socket, 'task:updated', (e: Payload) => e.task.id === task.id && e.task.state === 'working');
      await move(t.api, p.assignee, task.id, { state: 'working' });
      await movedSeen;
    } finally {
      r.socket.disconnect();
      a.socket.disconnect();
    }
  });

  it('dueAt: a task not terminal by then fails with result {reason: "expired"}, once, its message posted as the requester', async () => {
    const p = await pair();
    const task = await newTask(t.api, p, { dueAt: new Date(Date.now() + 1500).toISOString() });
    expect(task.dueAt).not.toBeNull();
    let now: Payload = task;
    await waitUntil('the task expires', async () => {
      now = (await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: p.requester.jwt })).body;
      return now.state === 'failed';
    }, 8000, 200);
    expect(now.result).toEqual({ reason: 'expired' });
    expect(now.history.map((h: Payload) => [h.state, h.by])).toEqual([['submitted', p.requester.id], ['failed', null]]);
    const messages = (await t.api.get(`/api/v1/rooms/${task.roomId}/messages`, { jwt: p.requester.jwt })).body.messages as Payload[];
    expect(messages.find((m) => m.id === now.history[1].messageId)).toMatchObject({ senderId: p.requester.id, task: { state: 'failed' } });
    // A terminal task is never expired again; a completed one with a past dueAt stays completed.
    const done = await newTask(t.api, p, { dueAt: new Date(Date.now() + 1500).toISOString() });
    await move(t.api, p.assignee, done.id, { state: 'completed' });
    // Past its dueAt, a sweep runs (this one awaited, rather than waiting for the timer's).
    await untilPast(new Date(done.dueAt));
    await t.server.app.ctx.tasks.expire();
    const after = (await t.api.get(`/api/v1/tasks/${done.id}`, { jwt: p.requester.jwt })).body;
    expect(after.state).toBe('completed');
    expect(after.history.map((h: Payload) => h.state)).toEqual(['submitted', 'completed']);
  });

  it('scoped tokens: tasks:read lists but does not create; tasks:write creates', async () => {
    const p = await pair();
    const { scopedSession } = await import('../helpers/api.js');
    const readOnly = await scopedSession(t.api, p.requester, { actions: ['tasks:read'] });
    expect((await t.api.post('/api/v1/tasks', { assignee: p.assignee.id, title: 'x' }, { jwt: readOnly })).status).toBe(403);
    expect((await t.api.get('/api/v1/tasks', { jwt: readOnly })).status).toBe(200);
    const writer = await scopedSession(t.api, p.requester, { actions: ['tasks:write'] });
    expect((await t.api.post('/api/v1/tasks', { assignee: p.assignee.id, title: 'x' }, { jwt: writer })).status).toBe(201);
    expect((await t.api.get('/api/v1/tasks', { jwt: writer })).status).toBe(403);
  });
});
