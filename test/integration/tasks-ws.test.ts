import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, scopedSession, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { emitWithAck, useSockets, waitFor, type Payload } from '../helpers/ws.js';

// docs/tasks.md: task:move over the WebSocket, the same move as POST /api/v1/tasks/:id/state.

describe('task:move', () => {
  const t = useTestServer();
  const connect = useSockets(t);
  const newTask = async (requester: TestAgent, assignee: TestAgent): Promise<Payload> => {
    const res = await t.api.post('/api/v1/tasks', { assignee: assignee.id, title: 'Over the socket' }, { jwt: requester.jwt });
    expect(res.status).toBe(201);
    return res.body;
  };

  it('moves a task: the ack is the task, both sides hear task:updated, the move\'s message is posted; refusals come in the ack', async () => {
    const [requester, assignee] = [await newAgent(t.api), await newAgent(t.api)];
    const task = await newTask(requester, assignee);
    const worker = await connect(assignee.jwt);
    const watcher = await connect(requester.jwt);
    const heard = waitFor<Payload>(watcher, 'task:updated', (u) => u.task.id === task.id && u.task.state === 'working');
    const ack = await emitWithAck(worker, 'task:move', { taskId: task.id, state: 'working', message: { body: 'on it', data: { eta: 5 } }, requestId: 'r1' });
    expect(ack.task).toMatchObject({ id: task.id, state: 'working', history: [{ state: 'submitted' }, { state: 'working', by: assignee.id }] });
    expect((await heard).task.updatedAt).toBe(ack.task.updatedAt);
    const history = await t.api.get(`/api/v1/rooms/${task.roomId}/messages?limit=1`, { jwt: requester.jwt });
    expect(history.body.messages[0]).toMatchObject({ body: 'on it', data: { eta: 5 }, task: { id: task.id, state: 'working' }, id: ack.task.history[1].messageId });

    // Not allowed from here for the assignee: CONFLICT naming the task's state (the ack's message carries the details); the requester may cancel.
    expect(await emitWithAck(worker, 'task:move', { taskId: task.id, state: 'submitted' })).toMatchObject({ error: { code: 'CONFLICT', message: expect.stringMatching(/state working$/) } });
    expect(await emitWithAck(worker, 'task:move', { taskId: task.id, state: 'sleeping' })).toMatchObject({ error: { code: 'VALIDATION_ERROR', message: expect.stringMatching(/: state must be one of/) } });
    expect(await emitWithAck(worker, 'task:move', { taskId: 'nope', state: 'working' })).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
    expect(await emitWithAck(worker, 'task:move', { taskId: '0190c3f5-0000-7000-8000-000000000000', state: 'working' })).toMatchObject({ error: { code: 'NOT_FOUND' } });
    expect(await emitWithAck(worker, 'task:move', { taskId: task.id, state: 'completed', result: { blob: 'x'.repeat(70_000) } })).toMatchObject({ error: { code: 'VALIDATION_ERROR', message: expect.stringMatching(/: result must be at most/) } });
    const canceled = await emitWithAck(watcher, 'task:move', { taskId: task.id, state: 'canceled' });
    expect(canceled.task).toMatchObject({ state: 'canceled' });
    expect(await emitWithAck(worker, 'task:move', { taskId: task.id, state: 'completed' })).toMatchObject({ error: { code: 'CONFLICT', message: expect.stringMatching(/state canceled$/) } });
  });

  it('another agent\'s task is NOT_FOUND, an admin who is neither side FORBIDDEN, a token without tasks:write FORBIDDEN', async () => {
    const [requester, assignee, outsider] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
    const admin = await newAdmin(t.api);
    const task = await newTask(requester, assignee);
    expect(await emitWithAck(await connect(outsider.jwt), 'task:move', { taskId: task.id, state: 'working' })).toMatchObject({ error: { code: 'NOT_FOUND' } });
    expect(await emitWithAck(await connect(admin.jwt), 'task:move', { taskId: task.id, state: 'working' })).toMatchObject({ error: { code: 'FORBIDDEN' } });
    const readOnly = await scopedSession(t.api, assignee, { actions: ['tasks:read'] });
    expect(await emitWithAck(await connect(readOnly), 'task:move', { taskId: task.id, state: 'working' })).toMatchObject({ error: { code: 'FORBIDDEN' } });
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body.state).toBe('submitted');
  });
});
