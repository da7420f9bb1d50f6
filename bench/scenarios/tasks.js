import { join } from 'node:path';
import { jwtMinter, startService } from '../lib/service.js';
import { SioClient, connectAll } from '../lib/sio-client.js';
import { newHistogram, recordMs, summarize } from '../lib/histogram.js';

/** The points of a round, in the order they usually come, each timed from the round's start. */
const TASK_MARKS = ['created', 'event', 'working', 'completed', 'done'];
const FLOOR_MARKS = ['sent', 'event', 'reply', 'second', 'done'];

/**
 * Scenario 23 (docs/benchmarks.md): a task's round trip against one `message:send` round trip and
 * against the floor of the task's shape, in the same run, in alternating rounds.
 *
 * - send (the yardstick): the requester's `message:send` to its acknowledgement.
 * - task: the requester creates a task over REST; the assignee's socket sees `task:updated`; the
 *   assignee moves it to `working`, then to `completed`, over REST; the requester, which holds
 *   `GET /api/v1/tasks/:id?wait=30` from the creation on (again after each change it sees), sees it
 *   completed. Target: p50 at most 3 x the send's.
 * - floor: the same shape made of plain messages over the same transports, only the unavoidable
 *   work: three durable writes one after the other, each a message, a socket hop and a held read.
 *   The requester posts a message over REST; the assignee's socket sees `message:new`; the assignee
 *   posts two messages over REST one after the other, the second mentioning the requester; the
 *   requester, holding `GET /api/v1/inbox?filter=attention&wait=30` from its post's answer on (the
 *   closest analogue of the task's held GET: a held read woken by a write it filters for), returns
 *   with the second. Out of the timed window, the requester marks the room read, so that every floor
 *   round starts with an empty attention inbox.
 *
 * Each round's points (`TASK_MARKS`, `FLOOR_MARKS`) are timed from its start, to say where the time goes.
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

    // The round in flight (one at a time): its start and the times of its points.
    let current = null;
    const mark = (name) => {
      if (current !== null) current.marks[name] ??= performance.now() - current.t0;
    };
    const failed = (err) => {
      if (current !== null) current.error ??= err;
      else log(`assignee failed: ${err.message}`);
    };

    // The assignee works every task it is handed, as soon as its socket hears of it.
    worker.onEvent = (name, args) => {
      const task = args[0]?.task;
      if (name !== 'task:updated' || task?.state !== 'submitted' || task.assigneeId !== assignee.id) return;
      mark('event');
      void (async () => {
        await call('assignee', 'POST', `/api/v1/tasks/${task.id}/state`, { state: 'working' });
        mark('working');
        await call('assignee', 'POST', `/api/v1/tasks/${task.id}/state`, { state: 'completed', result: { ok: true } });
        mark('completed');
      })().catch(failed);
    };
    // ... and answers every floor message of the requester's with two messages, the second for its attention.
    worker.onNew = (frame) => {
      const text = frame.toString('utf8');
      const message = JSON.parse(text.slice(text.indexOf('[')))[1];
      const round = /^floor (-?\d+)$/.exec(message?.body ?? '');
      if (round === null || message.authorAgentId !== requester.id) return;
      mark('event');
      void (async () => {
        await call('assignee', 'POST', `/api/v1/rooms/${room.id}/messages`, { body: `floor ${round[1]} working` });
        mark('reply');
        await call('assignee', 'POST', `/api/v1/rooms/${room.id}/messages`, { body: `floor ${round[1]} completed`, mentions: [requester.id] });
        mark('second');
      })().catch(failed);
    };

    const sendOnce = () => new Promise((resolve, reject) => {
      const t0 = performance.now();
      sender.emitWithAck('message:send', { roomId: room.id, body: 'a round trip' }, (ack) => {
        if (typeof ack?.messageId === 'string') resolve(performance.now() - t0);
        else reject(new Error(`message:send refused: ${JSON.stringify(ack)}`));
      });
    });
    /** A round of `run`, with `current` set for the assignee's handlers: its time and its points. */
    const timed = async (names, run) => {
      const round = { t0: performance.now(), marks: {}, error: null };
      current = round;
      try {
        await run(round);
        round.marks.done = performance.now() - round.t0;
        // The assignee's last answer may come after the requester's return: wait for it (untimed).
        const until = performance.now() + 5000;
        while (round.error === null && names.some((m) => round.marks[m] === undefined) && performance.now() < until) await new Promise((r) => setTimeout(r, 1));
        if (round.error !== null) throw round.error;
        return round;
      } finally {
        current = null;
      }
    };
    const taskOnce = (i) => timed(TASK_MARKS, async (round) => {
      let task = await call('requester', 'POST', '/api/v1/tasks', { assignee: assignee.id, title: `bench task ${i}`, room: room.id });
      round.marks.created = performance.now() - round.t0;
      round.gets = 0;
      while (task.state !== 'completed') {
        task = await call('requester', 'GET', `/api/v1/tasks/${task.id}?wait=30&changedAfter=${encodeURIComponent(task.updatedAt)}`);
        round.gets++;
        if (['failed', 'canceled', 'rejected'].includes(task.state)) throw new Error(`task ended ${task.state}`);
      }
    });
    const floorOnce = async (i) => {
      let lastSeq = 0;
      const round = await timed(FLOOR_MARKS, async (r) => {
        const first = await call('requester', 'POST', `/api/v1/rooms/${room.id}/messages`, { body: `floor ${i}` });
        r.marks.sent = performance.now() - r.t0;
        lastSeq = first.seq;
        for (;;) {
          const inbox = await call('requester', 'GET', '/api/v1/inbox?filter=attention&limit=10&wait=30');
          for (const m of inbox.messages) lastSeq = Math.max(lastSeq, m.seq);
          if (inbox.messages.some((m) => m.body === `floor ${i} completed`)) return;
          if (inbox.messages.length === 0) throw new Error('the floor\'s held inbox expired');
        }
      });
      // Untimed: the room read up to the assignee's second message, for the next round's held read.
      await call('requester', 'POST', `/api/v1/rooms/${room.id}/read`, { seq: lastSeq });
      return round;
    };

    // Warm-up, then alternating rounds: the send, then the task and the floor in turn first.
    for (let i = 0; i < 5; i++) {
      await sendOnce();
      await taskOnce(-i - 1);
      await floorOnce(-i - 1);
    }
    const hist = { send: newHistogram(), task: newHistogram(), floor: newHistogram() };
    const points = {
      task: Object.fromEntries(TASK_MARKS.map((m) => [m, newHistogram()])),
      floor: Object.fromEntries(FLOOR_MARKS.map((m) => [m, newHistogram()])),
    };
    let gets = 0;
    const record = (kind, round) => {
      recordMs(hist[kind], round.marks.done);
      for (const [name, ms] of Object.entries(round.marks)) recordMs(points[kind][name], ms);
    };
    for (let i = 0; i < rounds; i++) {
      recordMs(hist.send, await sendOnce());
      const order = i % 2 === 0 ? ['task', 'floor'] : ['floor', 'task'];
      for (const kind of order) {
        const round = kind === 'task' ? await taskOnce(i) : await floorOnce(i);
        if (kind === 'task') gets += round.gets;
        record(kind, round);
      }
    }
    const send = summarize(hist.send);
    const task = summarize(hist.task);
    const floor = summarize(hist.floor);
    const ratio = (a, b) => (a !== null && b !== null && b > 0 ? Math.round((a / b) * 100) / 100 : null);
    const ratios = { taskToSend: ratio(task.p50, send.p50), floorToSend: ratio(floor.p50, send.p50), taskToFloor: ratio(task.p50, floor.p50) };
    const p50s = (kind, names) => Object.fromEntries(names.map((m) => [m, summarize(points[kind][m]).p50]));
    const breakdown = { task: p50s('task', TASK_MARKS), floor: p50s('floor', FLOOR_MARKS), taskGetsPerRound: Math.round((gets / rounds) * 100) / 100 };
    const line = (marks) => Object.entries(marks).map(([m, ms]) => `${m} ${ms?.toFixed(2)}`).join(', ');
    log(`message:send round trip p50 ${send.p50.toFixed(2)} ms, p99 ${send.p99.toFixed(2)} ms (${rounds} rounds)`);
    log(`task round trip         p50 ${task.p50.toFixed(2)} ms, p99 ${task.p99.toFixed(2)} ms: ${ratios.taskToSend} x the send (target <= 3)`);
    log(`floor round trip        p50 ${floor.p50.toFixed(2)} ms, p99 ${floor.p99.toFixed(2)} ms: ${ratios.floorToSend} x the send; the task ${ratios.taskToFloor} x the floor`);
    log(`task points  p50 ms from its start: ${line(breakdown.task)} (${breakdown.taskGetsPerRound} held GETs per round)`);
    log(`floor points p50 ms from its start: ${line(breakdown.floor)}`);
    return {
      rounds, send, task, floor, breakdown,
      // `ratio`: the task to the send, the target's figure.
      ratio: ratios.taskToSend, ...ratios,
      meetsTarget: ratios.taskToSend !== null && ratios.taskToSend <= 3,
    };
  } finally {
    for (const c of clients) c.close();
    for (const p of procs) await p.stop();
  }
}
