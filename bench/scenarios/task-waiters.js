import http from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newHistogram, recordMs, summarize } from '../lib/histogram.js';
import { jwtMinter, startService } from '../lib/service.js';
import { holdLongPolls, openInspector, request, settled, waitForRest } from './inbox.js';

const ROOM_SIZE = 10;
const WAIT_SECONDS = 30;
/** How long the other waiters get, after a create's assignee is woken, to show a spurious wake-up. */
const SPURIOUS_WINDOW_MS = 200;
const TASKS_PATH = `/api/v1/tasks?as=assignee&state=submitted&wait=${WAIT_SECONDS}`;
const INBOX_PATH = `/api/v1/inbox?limit=10&wait=${WAIT_SECONDS}`;

const heldSockets = (agent) => Object.values(agent.sockets).reduce((n, list) => n + list.length, 0);
const round1 = (x) => Math.round(x * 10) / 10;

/**
 * Memory per held request, measured as scenario 10 measures the inbox's: RSS and JS heap (live
 * objects, after a full GC through the inspector) before and once `count` requests are held and the
 * service is back at rest.
 */
async function heldMemory(proc, inspector, agent, count, holdAll) {
  const heapBefore = await inspector.heapAfterGc();
  const rssBefore = await settled(() => proc.rss());
  holdAll();
  const deadline = Date.now() + 30_000;
  while (heldSockets(agent) < count && Date.now() < deadline) await sleep(100);
  const settleSeconds = await waitForRest(proc, deadline);
  const heapHeld = await inspector.heapAfterGc();
  const rssHeld = await settled(() => proc.rss());
  return {
    held: heldSockets(agent),
    settleSeconds,
    rssBeforeMiB: round1(rssBefore / 2 ** 20),
    rssHeldMiB: round1(rssHeld / 2 ** 20),
    kbPerWaiter: round1((rssHeld - rssBefore) / count / 1024),
    heapKbPerWaiter: round1((heapHeld - heapBefore) / count / 1024),
  };
}

/**
 * Scenario 24 (docs/benchmarks.md): 2,000 agents (200 with --quick) in rooms of 10, each holding
 * `GET /api/v1/tasks?as=assignee&state=submitted&wait=30` on its own keep-alive connection.
 *
 * First, on a fresh service, the yardstick: the same agents hold `GET /api/v1/inbox?wait=30`
 * instead, and the memory per held request is measured as scenario 10 measures it. Then, on another
 * fresh service on the same database, the task waiters: their memory the same way, then 20 tasks (5
 * with --quick), one at a time, each created by a member of a room for another member: the wake
 * latency of the assignee (from the create's start to its held answer having arrived; target p99
 * under 50 ms), and every other answer counted as spurious (target 0), over 200 ms after each wake.
 * A woken assignee moves its task to `working` (out of `submitted`) and holds again. The inbox goes
 * first because a task posts a message in its room, which would end its members' held inbox reads.
 */
export async function taskWaitersScenario(bench) {
  const { quick, tmp, log } = bench;
  const count = quick ? 200 : 2000;
  const creates = quick ? 5 : 20;
  // The service refuses a JWT whose lifetime exceeds its own (JWT_TTL_SECONDS, 900 by default).
  const mint = jwtMinter(bench.jwtSecret, 900);
  const procs = [];
  const runs = [];
  const state = { errors: 0, firstError: null, spurious: 0 };
  const fail = (message) => {
    state.errors++;
    state.firstError ??= message;
  };
  try {
    // Fixtures are written by one service process; fresh ones on the same database are measured,
    // so that the garbage of thousands of REST calls does not sit in the "before" figures.
    const databaseUrl = `sqlite:${join(tmp, 'task-waiters.sqlite')}`;
    const setup = await startService({ name: 'service-task-waiters-setup', databaseUrl, jwtSecret: bench.jwtSecret });
    procs.push(setup.proc);
    const admin = await setup.api.createAgent('admin');
    // Two more agents than waiters: a warm-up room of their own, outside the measured rooms.
    const all = await setup.api.createAgents(count + 2);
    const warm = all.splice(count, 2).map((a) => a.id);
    const rooms = [];
    for (let i = 0; i < count; i += ROOM_SIZE) {
      const members = all.slice(i, i + ROOM_SIZE).map((a) => a.id);
      rooms.push({ id: (await setup.api.createRoom(admin.id, members)).id, members });
    }
    const warmRoom = (await setup.api.createRoom(admin.id, warm)).id;
    await procs.pop().stop();
    log(`${count} agents in ${rooms.length} rooms of ${ROOM_SIZE} created`);
    const jwts = new Map([...all.map((a) => a.id), ...warm].map((id) => [id, mint(id)]));
    const ids = all.map((a) => a.id);

    /** A fresh service on the database, with its inspector and a keep-alive agent of its own. */
    const fresh = async (name) => {
      const service = await startService({ name, databaseUrl, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir, nodeArgs: ['--inspect=127.0.0.1:0'] });
      procs.push(service.proc);
      const inspector = await openInspector(service.proc);
      const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
      const call = async (method, path, who, body, expect) => {
        const res = await request(agent, service.url, method, path, jwts.get(who), body);
        if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
        return res.body;
      };
      const run = { service, inspector, agent, call, stopped: false };
      runs.push(run);
      return run;
    };
    /** Ends a run: its held requests fail as the agent goes, which its handlers ignore once `stopped`. */
    const stop = async (run) => {
      run.stopped = true;
      run.agent.destroy();
      run.inspector.close();
      procs.splice(procs.indexOf(run.service.proc), 1);
      await run.service.proc.stop();
    };

    // 1. The yardstick: the inbox's held requests, measured the same way.
    const inbox = await fresh('service-task-waiters-inbox');
    for (let i = 0; i < 5; i++) {
      const held = inbox.call('GET', '/api/v1/inbox?wait=5', warm[1], undefined, 200);
      await sleep(50);
      await inbox.call('POST', `/api/v1/rooms/${warmRoom}/messages`, warm[0], { body: `warm-up ${i}` }, 201);
      const answer = await held;
      await inbox.call('POST', `/api/v1/rooms/${warmRoom}/read`, warm[1], { seq: Math.max(...answer.messages.map((m) => m.seq)) }, 200);
    }
    const holdInbox = (agentId) => {
      inbox.call('GET', INBOX_PATH, agentId, undefined, 200).then(
        () => { if (!inbox.stopped) fail('an inbox request was answered while no message was sent'); },
        (err) => { if (!inbox.stopped) fail(err.message); },
      );
    };
    const inboxMemory = await heldMemory(inbox.service.proc, inbox.inspector, inbox.agent, count, () => ids.forEach(holdInbox));
    log(`inbox    ${inboxMemory.kbPerWaiter} KB RSS per held request (${inboxMemory.rssBeforeMiB} -> ${inboxMemory.rssHeldMiB} MiB), JS heap ${inboxMemory.heapKbPerWaiter} KB; ${inboxMemory.held} held, at rest after ${inboxMemory.settleSeconds} s`);
    await stop(inbox);
    if (state.errors > 0) throw new Error(`${state.errors} inbox requests failed (${state.firstError})`);

    // 2. The task waiters.
    const tasks = await fresh('service-task-waiters');
    for (let i = 0; i < 5; i++) {
      const held = tasks.call('GET', `/api/v1/tasks?as=assignee&state=submitted&wait=5`, warm[1], undefined, 200);
      await sleep(50);
      await tasks.call('POST', '/api/v1/tasks', warm[0], { assignee: warm[1], title: `warm-up ${i}`, room: warmRoom }, 201);
      const answer = await held;
      if (answer.tasks.length !== 1) throw new Error(`warm-up: ${JSON.stringify(answer)}`);
      await tasks.call('POST', `/api/v1/tasks/${answer.tasks[0].id}/state`, warm[1], { state: 'working' }, 200);
    }

    // expected: agentId -> {t0, title} of the task created for it (the answer may come before the create's).
    const expected = new Map();
    const wakeHist = newHistogram();
    const createHist = newHistogram();
    let woken = 0;
    // The scenario's counters, the run's end as `stopping`: held again at once after each answer.
    const polls = { get stopping() { return tasks.stopped; }, held: 0, errors: 0, firstError: null, timeouts: 0 };
    const holdTasks = () => holdLongPolls(ids, polls, {
      get: (agentId) => request(tasks.agent, tasks.service.url, 'GET', TASKS_PATH, jwts.get(agentId)),
      isEmpty: (body) => body.tasks.length === 0,
      async answered(agentId, body, arrived) {
        const wait = expected.get(agentId);
        if (wait !== undefined && body.tasks.length === 1 && body.tasks[0].title === wait.title) {
          recordMs(wakeHist, arrived - wait.t0);
          wait.ms = arrived - wait.t0;
          woken++;
          expected.delete(agentId);
        } else state.spurious++;
        // Out of `submitted`, so that the next held request waits again.
        try {
          for (const task of body.tasks) await tasks.call('POST', `/api/v1/tasks/${task.id}/state`, agentId, { state: 'working' }, 200);
        } catch (err) {
          if (!tasks.stopped) fail(err.message);
        }
      },
    });
    const taskMemory = await heldMemory(tasks.service.proc, tasks.inspector, tasks.agent, count, holdTasks);
    log(`tasks    ${taskMemory.kbPerWaiter} KB RSS per held request (${taskMemory.rssBeforeMiB} -> ${taskMemory.rssHeldMiB} MiB), JS heap ${taskMemory.heapKbPerWaiter} KB; ${taskMemory.held} held, at rest after ${taskMemory.settleSeconds} s`);

    let notWoken = 0;
    const perCreate = [];
    for (let s = 0; s < creates; s++) {
      const room = rooms[(s * 7) % rooms.length];
      const requester = room.members[s % ROOM_SIZE];
      const assignee = room.members[(s + 1) % ROOM_SIZE];
      const t0 = performance.now();
      const wait = { t0, title: `wake-up ${s}`, ms: null };
      perCreate.push(wait);
      expected.set(assignee, wait);
      await tasks.call('POST', '/api/v1/tasks', requester, { assignee, title: wait.title, room: room.id }, 201);
      recordMs(createHist, performance.now() - t0);
      const until = performance.now() + 5000;
      while (expected.has(assignee) && performance.now() < until) await sleep(2);
      if (expected.delete(assignee)) notWoken++;
      await sleep(SPURIOUS_WINDOW_MS);
    }
    const wake = summarize(wakeHist);
    // Each create's wake in order: tells one slow create (a pause on the machine) from a trend.
    wake.perCreateMs = perCreate.map((w) => (w.ms === null ? null : round1(w.ms)));
    log(`wake per create (ms): ${wake.perCreateMs.join(' ')}`);
    const create = summarize(createHist);
    log(`wake     p50 ${wake.p50} ms  p99 ${wake.p99} ms  max ${wake.max} ms over ${woken} woken of ${creates} (${notWoken} not woken within 5 s, ${state.spurious} spurious wake-ups, ${polls.timeouts} expired, ${state.errors + polls.errors} errors); the create's answer p50 ${create.p50} ms`);
    const memory = {
      tasks: taskMemory,
      inbox: inboxMemory,
      // The task waiter's memory against the inbox waiter's (RSS, then JS heap), from this run.
      rssRatio: inboxMemory.kbPerWaiter > 0 ? Math.round((taskMemory.kbPerWaiter / inboxMemory.kbPerWaiter) * 100) / 100 : null,
      heapRatio: inboxMemory.heapKbPerWaiter > 0 ? Math.round((taskMemory.heapKbPerWaiter / inboxMemory.heapKbPerWaiter) * 100) / 100 : null,
    };
    log(`memory   a task waiter ${memory.rssRatio} x an inbox waiter's RSS, ${memory.heapRatio} x its JS heap`);
    await stop(tasks);
    if (state.errors + polls.errors > 0) throw new Error(`${state.errors + polls.errors} task requests failed (${state.firstError ?? polls.firstError})`);
    return {
      waiters: count, roomSize: ROOM_SIZE, creates, waitSeconds: WAIT_SECONDS,
      wake, create, woken, notWoken, spuriousWakeups: state.spurious, expiredDuringRun: polls.timeouts, memory,
      // The targets: p99 under 50 ms, every assignee woken, no spurious wake-up.
      meetsTarget: wake.p99 !== null && wake.p99 < 50 && notWoken === 0 && state.spurious === 0,
    };
  } finally {
    for (const run of runs.filter((r) => !r.stopped)) {
      run.stopped = true;
      run.agent.destroy();
      run.inspector.close();
    }
    for (const p of procs) await p.stop();
  }
}
