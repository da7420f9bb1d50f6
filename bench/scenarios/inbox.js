import http from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newHistogram, recordMs, summarize } from '../lib/histogram.js';
import { connectInspector } from '../lib/inspector.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';

const ROOM_SIZE = 10;
const WAIT_SECONDS = 30;
const CPU_WINDOW_MS = 5000;

/** The median of a few samples of `read()`, taken once the process has settled. */
export async function settled(read, samples = 5) {
  await sleep(1500);
  const values = [];
  for (let i = 0; i < samples; i++) {
    values.push(await read());
    await sleep(200);
  }
  return values.sort((a, b) => a - b)[Math.floor(samples / 2)];
}

/**
 * The service's DevTools inspector (the service runs with `--inspect=127.0.0.1:0`): a full garbage
 * collection, then the JS heap in use, so that the heap figures are live objects, not garbage.
 */
export async function openInspector(proc) {
  const { call, close } = await connectInspector(proc);
  return {
    async heapAfterGc() {
      await call('HeapProfiler.collectGarbage');
      return (await call('Runtime.getHeapUsage')).usedSize;
    },
    close,
  };
}

/** The process's CPU (all threads, from /proc) over a window of `windowMs`, in % of one core. */
export async function cpuPercent(proc, windowMs = CPU_WINDOW_MS) {
  const cpu0 = proc.cpu();
  const t0 = performance.now();
  await sleep(windowMs);
  const cpu1 = proc.cpu();
  return cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) / ((performance.now() - t0) / 1000)) * 100 * 100) / 100;
}

/**
 * Waits until the process used under 10 % of a core in each of two consecutive 500 ms windows
 * (or until `deadline`); resolves with the seconds it took.
 */
export async function waitForRest(proc, deadline) {
  const t0 = performance.now();
  let quiet = 0;
  while (quiet < 2 && Date.now() < deadline) {
    const cpu0 = proc.cpu();
    await sleep(500);
    quiet = proc.cpu() - cpu0 < 0.05 ? quiet + 1 : 0;
  }
  return Math.round((performance.now() - t0) / 100) / 10;
}

/** One JSON request over the keep-alive agent; resolves with {status, body} when the response has fully arrived. */
export function request(agent, base, method, path, jwt, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? null : JSON.stringify(body);
    const headers = { authorization: `Bearer ${jwt}` };
    if (payload !== null) headers['content-type'] = 'application/json';
    const req = http.request(`${base}${path}`, { method, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode, body: text === '' ? null : JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}

/**
 * Memory per held request of the bare baseline (bench/baselines/bare-hold.js): `count` requests
 * held on their own keep-alive connections, RSS and JS heap after a full GC, before and while.
 */
async function bareHoldMemory(count, profileDir) {
  const bare = await startBaseline({ name: 'bare-hold', script: 'bench/baselines/bare-hold.js', profileDir, nodeArgs: ['--inspect=127.0.0.1:0'] });
  const inspector = await openInspector(bare.proc);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const pending = [];
  try {
    // Warm the server's code paths first, as the service's were.
    for (let i = 0; i < 5; i++) await request(agent, bare.url, 'GET', '/api/v1/inbox?wait=0', 'x');
    const heapBefore = await inspector.heapAfterGc();
    const rssBefore = await settled(() => bare.proc.rss());
    for (let i = 0; i < count; i++) pending.push(request(agent, bare.url, 'GET', `/api/v1/inbox?limit=10&wait=${WAIT_SECONDS}`, 'x').catch(() => null));
    const deadline = Date.now() + 20_000;
    while (Object.values(agent.sockets).reduce((n, list) => n + list.length, 0) < count && Date.now() < deadline) await sleep(100);
    await waitForRest(bare.proc, deadline);
    const heapHeld = await inspector.heapAfterGc();
    const rssHeld = await settled(() => bare.proc.rss());
    return {
      kbPerWaiter: Math.round(((rssHeld - rssBefore) / count / 1024) * 10) / 10,
      heapKbPerWaiter: Math.round(((heapHeld - heapBefore) / count / 1024) * 10) / 10,
    };
  } finally {
    agent.destroy();
    inspector.close();
    await bare.proc.stop();
  }
}

/**
 * Scenario 10: 2,000 agents (200 with --quick), in rooms of 10, each holding
 * `GET /api/v1/inbox?wait=30` over its own keep-alive connection. Measured on the service:
 * RSS and JS heap (live objects, after a full GC through the inspector) before and while they wait
 * (per held request), CPU over a quiet 5 s window while
 * they wait, then the wake latency: one message to each of 20 rooms (5 with --quick), one at a
 * time, by a member; for each of the 9 other members, from the send's start to its inbox response
 * having arrived. A woken agent marks the message read and holds again, so the population stays
 * whole; the sender's own request must not be answered by its own message.
 */
/**
 * Holds one long-poll per agent, and holds it again as soon as it answers (scenarios 10, 21, 24):
 * `get(agentId)` sends it ({status, body}); a 200 answer with something in it (not `isEmpty`) goes
 * to `answered(agentId, body, arrivedAt)`, which may mark it read, before the next hold; an empty
 * 200 counts in `state.timeouts`, anything else in `state.errors` (and `firstError`).
 * `state.held` counts the requests in flight; setting `state.stopping` ends it.
 */
export function holdLongPolls(agentIds, state, { get, isEmpty, answered }) {
  const hold = (agentId) => {
    if (state.stopping) return;
    state.held++;
    get(agentId).then(
      async (res) => {
        const arrived = performance.now();
        state.held--;
        if (state.stopping) return;
        if (res.status !== 200) {
          state.errors++;
          state.firstError ??= `${res.status} ${JSON.stringify(res.body)}`;
        } else if (isEmpty(res.body)) {
          state.timeouts++;
        } else {
          await answered(agentId, res.body, arrived);
        }
        hold(agentId);
      },
      (err) => {
        state.held--;
        if (state.stopping) return;
        state.errors++;
        state.firstError ??= err.message;
        hold(agentId);
      },
    );
  };
  for (const id of agentIds) hold(id);
}

export async function inboxScenario(bench) {
  const { quick, tmp, log } = bench;
  const count = quick ? 200 : 2000;
  const sends = quick ? 5 : 20;
  // The service refuses a JWT whose lifetime exceeds its own (JWT_TTL_SECONDS, 900 by default).
  const mint = jwtMinter(bench.jwtSecret, 900);
  const procs = [];
  let inspector = null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const state = { stopping: false, errors: 0, firstError: null, timeouts: 0, unexpected: 0, held: 0 };
  try {
    // Fixtures are written by one service process; a fresh one on the same database is measured,
    // so that the garbage of thousands of REST calls does not sit in the "before" figures.
    const databaseUrl = `sqlite:${join(tmp, 'inbox.sqlite')}`;
    const setup = await startService({ name: 'service-inbox-setup', databaseUrl, jwtSecret: bench.jwtSecret });
    procs.push(setup.proc);
    const admin = await setup.api.createAgent('admin');
    // Two more agents than waiters: a warm-up room of their own, outside the measured rooms.
    const agents = await setup.api.createAgents(count + 2);
    const warm = agents.splice(count, 2);
    const rooms = [];
    for (let i = 0; i < count; i += ROOM_SIZE) {
      const members = agents.slice(i, i + ROOM_SIZE);
      rooms.push({ id: (await setup.api.createRoom(admin.id, members.map((a) => a.id))).id, members: members.map((a) => a.id) });
    }
    const warmRoom = (await setup.api.createRoom(admin.id, warm.map((a) => a.id))).id;
    await setup.proc.stop();
    log(`${count} agents in ${rooms.length} rooms of ${ROOM_SIZE} created`);

    const service = await startService({ name: 'service-inbox', databaseUrl, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir, nodeArgs: ['--inspect=127.0.0.1:0'] });
    procs.push(service.proc);
    inspector = await openInspector(service.proc);
    const jwts = new Map([...agents, ...warm].map((a) => [a.id, mint(a.id)]));
    const inboxPath = `/api/v1/inbox?limit=10&wait=${WAIT_SECONDS}`;
    const markRead = async (agentId, messages) => {
      const top = new Map();
      for (const m of messages) top.set(m.roomId, Math.max(top.get(m.roomId) ?? 0, m.seq));
      for (const [roomId, seq] of top) {
        const res = await request(agent, service.url, 'POST', `/api/v1/rooms/${roomId}/read`, jwts.get(agentId), { seq });
        if (res.status !== 200) throw new Error(`mark read: ${res.status} ${JSON.stringify(res.body)}`);
      }
    };

    // Warm-up on the warm room: a held request woken by a send, marked read, a few times.
    for (let i = 0; i < 5; i++) {
      const held = request(agent, service.url, 'GET', '/api/v1/inbox?wait=5', jwts.get(warm[1].id));
      await sleep(50);
      const sent = await request(agent, service.url, 'POST', `/api/v1/rooms/${warmRoom}/messages`, jwts.get(warm[0].id), { body: `warm-up ${i}` });
      if (sent.status !== 201) throw new Error(`warm-up send: ${sent.status} ${JSON.stringify(sent.body)}`);
      const res = await held;
      if (res.status !== 200 || res.body.messages.length !== 1) throw new Error(`warm-up inbox: ${res.status} ${JSON.stringify(res.body)}`);
      await markRead(warm[1].id, res.body.messages);
    }

    const heapBefore = await inspector.heapAfterGc();
    const rssBefore = await settled(() => service.proc.rss());
    // The same window without waiters: what the idle service costs anyway (timers, metrics, the machine's noise).
    const noWaiterCpuPercent = await cpuPercent(service.proc);

    // expected: agentId -> {roomId, t0} for the members a send must wake; wake latencies in ms.
    const expected = new Map();
    const wakeHist = newHistogram();
    const senders = new Set();
    let woken = 0;
    holdLongPolls(agents.map((a) => a.id), state, {
      get: (agentId) => request(agent, service.url, 'GET', inboxPath, jwts.get(agentId)),
      isEmpty: (body) => body.messages.length === 0,
      async answered(agentId, body, arrived) {
        const wait = expected.get(agentId);
        if (wait === undefined || body.messages.some((m) => m.roomId !== wait.roomId) || senders.has(agentId)) state.unexpected++;
        else {
          recordMs(wakeHist, arrived - wait.t0);
          wait.slowest.ms = Math.max(wait.slowest.ms, arrived - wait.t0);
          woken++;
        }
        expected.delete(agentId);
        await markRead(agentId, body.messages);
      },
    });
    // Every request on its socket, then the service's CPU back to rest: it has read every inbox
    // (empty) and holds them all. On a busy machine that can take seconds.
    const deadline = Date.now() + 20_000;
    while (Object.values(agent.sockets).reduce((n, list) => n + list.length, 0) < count && Date.now() < deadline) await sleep(100);
    const settleSeconds = await waitForRest(service.proc, deadline);
    log(`held     ${state.held} requests; the service at rest after ${settleSeconds} s`);
    const heapHeld = await inspector.heapAfterGc();
    const rssHeld = await settled(() => service.proc.rss());
    const memory = {
      rssBeforeMiB: Math.round((rssBefore / 2 ** 20) * 10) / 10,
      rssHeldMiB: Math.round((rssHeld / 2 ** 20) * 10) / 10,
      kbPerWaiter: Math.round(((rssHeld - rssBefore) / count / 1024) * 10) / 10,
      heapKbPerWaiter: Math.round(((heapHeld - heapBefore) / count / 1024) * 10) / 10,
    };
    log(`memory   ${memory.kbPerWaiter} KB RSS per held request (${memory.rssBeforeMiB} -> ${memory.rssHeldMiB} MiB), JS heap ${memory.heapKbPerWaiter} KB`);

    const idleCpuPercent = await cpuPercent(service.proc);
    log(`cpu      ${idleCpuPercent} % of a core over ${CPU_WINDOW_MS / 1000} s while ${state.held} requests are held (${noWaiterCpuPercent} % before, with none)`);
    if (state.errors > 0 || state.timeouts > 0) throw new Error(`held requests ended early: ${state.errors} errors (${state.firstError}), ${state.timeouts} empty`);

    const perSendMaxMs = [];
    // The sends: one room at a time, a different member each time, the next once all 9 are woken.
    for (let s = 0; s < sends; s++) {
      const room = rooms[(s * 7) % rooms.length];
      const sender = room.members[s % ROOM_SIZE];
      senders.add(sender);
      const slowest = { ms: 0 };
      perSendMaxMs.push(slowest);
      const t0 = performance.now();
      for (const m of room.members) if (m !== sender) expected.set(m, { roomId: room.id, t0, slowest });
      const sent = await request(agent, service.url, 'POST', `/api/v1/rooms/${room.id}/messages`, jwts.get(sender), { body: `wake-up ${s}` });
      if (sent.status !== 201) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.body)}`);
      const until = performance.now() + 5000;
      while (room.members.some((m) => expected.has(m)) && performance.now() < until) await sleep(5);
      senders.delete(sender);
      await sleep(100);
    }
    const notWoken = expected.size;
    const wake = summarize(wakeHist);
    // The slowest wake of each send, in order: tells one slow send (a pause on the machine) from a trend.
    wake.perSendMaxMs = perSendMaxMs.map((x) => Math.round(x.ms * 10) / 10);
    log(`slowest wake per send (ms): ${wake.perSendMaxMs.join(' ')}`);
    log(`wake     p50 ${wake.p50} ms  p99 ${wake.p99} ms  max ${wake.max} ms over ${woken} woken (${notWoken} not woken, ${state.unexpected} unexpected answers, ${state.timeouts} expired, ${state.errors} errors)`);
    if (notWoken > 0 || state.unexpected > 0 || woken !== sends * (ROOM_SIZE - 1)) {
      throw new Error(`${notWoken} waiters not woken within 5 s, ${state.unexpected} unexpected answers, ${woken} woken of ${sends * (ROOM_SIZE - 1)}`);
    }
    if (state.errors > 0) throw new Error(`${state.errors} inbox requests failed (${state.firstError})`);

    // The ceiling: the same number of requests held by a bare node:http server, measured the same way.
    state.stopping = true;
    for (const p of procs.splice(0)) await p.stop();
    memory.bare = await bareHoldMemory(count, bench.profileDir);
    log(`bare     ${memory.bare.kbPerWaiter} KB RSS per held request, JS heap ${memory.bare.heapKbPerWaiter} KB (node:http alone, the ceiling)`);
    return { waiters: count, roomSize: ROOM_SIZE, sends, waitSeconds: WAIT_SECONDS, memory, idleCpuPercent, noWaiterCpuPercent, cpuWindowSeconds: CPU_WINDOW_MS / 1000, wake, expiredDuringRun: state.timeouts };
  } finally {
    state.stopping = true;
    agent.destroy();
    inspector?.close();
    for (const p of procs) await p.stop();
  }
}
