import { join } from 'node:path';
import { jwtMinter, startService } from '../lib/service.js';
import { SioClient, connectAll } from '../lib/sio-client.js';
import { newHistogram, recordMs, summarize } from '../lib/histogram.js';

/**
 * Scenario 23 (docs/benchmarks.md): a task's round trip against one `message:send` round trip, in
 * the same run, one after the other. A round trip: the requester creates a task over REST; the
 * assignee's socket sees `task:updated`; the assignee moves it to `working`, then to `completed`,
 * over REST; the requester, which holds `GET /api/v1/tasks/:id?wait=30` from the creation on, sees
 * it completed. The yardstick: the requester's `message:send` to its acknowledgement. Target: task
 * round trip p50 at most 3 x the send's.
 */
export async function tasksScenario(bench) {
  const { quick, tmp, log } = bench;
  const rounds = quick ? 20 : 200;
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  const clients = [];
  try {
    const service = await startService({ name: 'service-tasks', databaseUrl: `sqlite:${join(tmp, 'tasks.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(service.proc);
    const admin = await service.api.createAgent('admin');
    const [requester, assignee] = await service.api.createAgents(2);
    const room = await service.api.createRoom(admin.id, [requester.id, assignee.id]);
    const jwt = { requester: mint(requester.id, 'agent'), assignee: mint(assignee.id, 'agent') };
    const call = async (who, method, path, body) => {
      const res = await fetch(`${service.url}${path}`, { method, headers: { authorization: `Bearer ${jwt[who]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const answer = await res.json();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
      return answer;
    };
    const sender = new SioClient(service.url, '/agents', { token: jwt.requester });
    const worker = new SioClient(service.url, '/agents', { token: jwt.assignee });
    clients.push(sender, worker);
    await connectAll(clients);

    // The assignee works every task it is handed, as soon as its socket hears of it.
    worker.onEvent = (name, args) => {
      const task = args[0]?.task;
      if (name !== 'task:updated' || task?.state !== 'submitted' || task.assigneeId !== assignee.id) return;
      void (async () => {
        await call('assignee', 'POST', `/api/v1/tasks/${task.id}/state`, { state: 'working' });
        await call('assignee', 'POST', `/api/v1/tasks/${task.id}/state`, { state: 'completed', result: { ok: true } });
      })().catch((err) => log(`assignee failed: ${err.message}`));
    };

    const sendOnce = () => new Promise((resolve, reject) => {
      const t0 = performance.now();
      sender.emitWithAck('message:send', { roomId: room.id, body: 'a round trip' }, (ack) => {
        if (typeof ack?.messageId === 'string') resolve(performance.now() - t0);
        else reject(new Error(`message:send refused: ${JSON.stringify(ack)}`));
      });
    });
    const taskOnce = async (i) => {
      const t0 = performance.now();
      let task = await call('requester', 'POST', '/api/v1/tasks', { assignee: assignee.id, title: `bench task ${i}`, room: room.id });
      while (task.state !== 'completed') {
        task = await call('requester', 'GET', `/api/v1/tasks/${task.id}?wait=30&changedAfter=${encodeURIComponent(task.updatedAt)}`);
        if (['failed', 'canceled', 'rejected'].includes(task.state)) throw new Error(`task ended ${task.state}`);
      }
      return performance.now() - t0;
    };

    // Warm-up, then alternating rounds.
    for (let i = 0; i < 5; i++) { await sendOnce(); await taskOnce(-i - 1); }
    const sends = newHistogram();
    const tasks = newHistogram();
    for (let i = 0; i < rounds; i++) {
      recordMs(sends, await sendOnce());
      recordMs(tasks, await taskOnce(i));
    }
    const send = summarize(sends);
    const task = summarize(tasks);
    const ratio = send.p50 > 0 ? task.p50 / send.p50 : null;
    log(`message:send round trip p50 ${send.p50.toFixed(2)} ms, p99 ${send.p99.toFixed(2)} ms (${rounds} rounds)`);
    log(`task round trip         p50 ${task.p50.toFixed(2)} ms, p99 ${task.p99.toFixed(2)} ms: ${ratio?.toFixed(2)} x the send (target <= 3)`);
    return { rounds, send, task, ratio, meetsTarget: ratio !== null && ratio <= 3 };
  } finally {
    for (const c of clients) c.close();
    for (const p of procs) await p.stop();
  }
}
