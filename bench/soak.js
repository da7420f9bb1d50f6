// WebSocket churn soak (docs/reliability.md): many clients connect, join a room, send, read history, leave and
// disconnect, in a loop, against the built server in a child process; the server's heap (after a
// forced GC, over an IPC channel of bench/soak-server.js) and its Socket.IO rooms and sockets are
// sampled, and must come back to their baseline once the clients are gone.
//
//   npm run soak                      10 minutes (the documented run)
//   npm run soak -- --minutes 0.5     30 seconds (npm run soak:short)
//   options: --clients 50 --agents 25 --rooms 10 --dwell-ms 500 --pause-ms 200 --sample-seconds 30 --out file.json
//            --burst 2000 --burst-rounds 4: after the churn, rounds of N connections opened at once and closed
//            --snapshots: V8 heap snapshots at baseline and at the end, compared by constructor
//   npm run soak:memory               2,000 connections x 4 rounds with heap snapshots
//   (a client stays connected ~dwell-ms per cycle, receiving the room's traffic, then waits ~pause-ms)
//
// Exit code 0 when heap, rooms, sockets, engine.io clients, the connection gauge and directory
// presence are back at baseline; 1 otherwise.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { io } from 'socket.io-client';

const { fetch } = globalThis;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    clients: { type: 'string', default: '50' },
    agents: { type: 'string', default: '25' },
    rooms: { type: 'string', default: '10' },
    'dwell-ms': { type: 'string', default: '500' },
    'pause-ms': { type: 'string', default: '200' },
    'sample-seconds': { type: 'string' },
    'warmup-seconds': { type: 'string' },
    out: { type: 'string' },
    burst: { type: 'string', default: '0' },
    'burst-rounds': { type: 'string', default: '4' },
    snapshots: { type: 'boolean', default: false },
  },
});
const minutes = Number(opts.minutes);
const CLIENTS = Number(opts.clients);
const AGENTS = Number(opts.agents);
const ROOMS = Number(opts.rooms);
const DWELL_MS = Number(opts['dwell-ms']);
const PAUSE_MS = Number(opts['pause-ms']);
const BURST = Number(opts.burst);
const BURST_ROUNDS = Number(opts['burst-rounds']);
const durationMs = minutes * 60_000;
const sampleMs = 1000 * Number(opts['sample-seconds'] ?? Math.max(5, Math.min(30, Math.round(durationMs / 20_000))));
const warmupMs = 1000 * Number(opts['warmup-seconds'] ?? Math.max(5, Math.min(60, Math.round(durationMs / 5000))));
if (![minutes, CLIENTS, AGENTS, ROOMS, BURST_ROUNDS].every((n) => Number.isFinite(n) && n > 0) || ![DWELL_MS, PAUSE_MS, BURST].every((n) => Number.isInteger(n) ? n >= 0 : Number.isFinite(n) && n >= 0)) {
  console.error('usage: node bench/soak.js [--minutes 10] [--clients 50] [--agents 25] [--rooms 10] [--dwell-ms 500] [--pause-ms 200] [--sample-seconds N] [--burst N --burst-rounds 4] [--snapshots] [--out file]');
  process.exit(2);
}
// The verdict: what "back at baseline" means for the heap (after GC). Everything else must be equal.
const HEAP_TOLERANCE = (baseline) => Math.max(2 * 1024 * 1024, 0.05 * baseline);

const MiB = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = (list) => list[Math.floor(Math.random() * list.length)];

// ---- the server --------------------------------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'ams-soak-'));
const child = spawn(process.execPath, ['--expose-gc', join(ROOT, 'bench', 'soak-server.js')], {
  cwd: ROOT,
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  env: {
    PATH: process.env.PATH ?? '',
    // glibc's allocator, passed through to tell its retained pages from the server's own memory.
    ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}),
    DATABASE_URL: `sqlite:${join(dataDir, 'soak.sqlite')}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    JWT_SECRET: 'soak-secret-soak-secret-soak-secret-0123456789',
    // A burst spreads its connections over the agents; each may hold this many at once.
    WS_MAX_CONNECTIONS_PER_AGENT: String(Math.max(20, Math.ceil(BURST / AGENTS) + 5)),
    JWT_TTL_SECONDS: String(Math.max(900, Math.ceil(durationMs / 1000) + 600)),
    RATE_LIMIT_ANON_PER_MINUTE: '1000000',
    RATE_LIMIT_AGENT_PER_MINUTE: '1000000',
  },
});
let serverExited = null;
child.on('exit', (code, signal) => (serverExited = { code, signal }));

const pending = new Map();
let nextId = 0;
child.on('message', (message) => {
  const resolve = pending.get(message.id ?? message.type);
  if (resolve) {
    pending.delete(message.id ?? message.type);
    resolve(message);
  }
});
const listening = new Promise((resolve) => pending.set('listening', resolve));
const { url, pid } = await Promise.race([listening, sleep(30_000).then(() => Promise.reject(new Error('server did not start')))]);

async function serverSample(gc) {
  const id = ++nextId;
  const answer = new Promise((resolve) => pending.set(id, resolve));
  child.send({ type: 'sample', id, gc });
  return Promise.race([answer, sleep(10_000).then(() => Promise.reject(new Error('server did not answer a sample')))]);
}

/**
 * A V8 heap snapshot of the server, reduced to the number of live objects per constructor (the
 * snapshot file itself is deleted). Comparing two tells a leak (objects that stay) from V8 or the
 * allocator keeping memory it no longer uses (same objects, bigger heap or RSS).
 */
async function heapObjectCounts(label) {
  const id = ++nextId;
  const path = join(dataDir, `${label}.heapsnapshot`);
  const answer = new Promise((resolve) => pending.set(id, resolve));
  child.send({ type: 'snapshot', id, path });
  await Promise.race([answer, sleep(120_000).then(() => Promise.reject(new Error('server did not write a heap snapshot')))]);
  const { snapshot, nodes, strings } = JSON.parse(readFileSync(path, 'utf8'));
  rmSync(path, { force: true });
  const fields = snapshot.meta.node_fields;
  const types = snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const counts = {};
  let bytes = 0;
  for (let i = 0; i < nodes.length; i += width) {
    bytes += nodes[i + sizeAt];
    if (types[nodes[i + typeAt]] !== 'object') continue;
    const name = strings[nodes[i + nameAt]];
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return { counts, bytes };
}

/** Constructors whose count grew between two snapshots, largest growth first. */
function grownObjects(before, after, top = 15) {
  return Object.entries(after.counts)
    .map(([name, count]) => ({ name, before: before.counts[name] ?? 0, after: count, delta: count - (before.counts[name] ?? 0) }))
    .filter((row) => row.delta > 0)
    .sort((a, b) => b.delta - a.delta)
    .slice(0, top);
}

/** The objects a connection owns on the server: none may remain once every connection closed. */
const retainedAllowance = () => Math.max(2, Math.floor(((stats.burstConnections ?? 0) + stats.cycles) / 100));
const PER_CONNECTION_OBJECTS = ['Socket', 'Client', 'WebSocket', 'WebSocketServer', 'Receiver', 'Sender', 'Transport', 'Polling', 'TCP', 'Timeout'];

function vmRssBytes() {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function http(method, path, { body, jwt, headers = {} } = {}) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(jwt ? { authorization: `Bearer ${jwt}` } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === '' ? null : (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
}

const metricValue = (text, name) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
};

// ---- setup: agents, rooms, memberships (REST, open mode) ---------------------------------------

const suffix = Date.now().toString(36);
const newAgent = async (name, role) => {
  const agent = await http('POST', '/api/v1/agents', { body: { name, displayName: name, role } });
  const token = await http('POST', `/api/v1/agents/${agent.id}/tokens`, { body: { scopes: {} } });
  const session = await http('POST', '/api/v1/sessions', { body: { apiToken: token.token } });
  return { id: agent.id, jwt: session.token, rooms: [], foreignRooms: [] };
};
const admin = await newAgent(`soak-admin-${suffix}`, 'admin');
const agents = [];
for (let i = 0; i < AGENTS; i++) agents.push(await newAgent(`soak-${suffix}-${i}`, 'agent'));
const rooms = [];
for (let r = 0; r < ROOMS; r++) {
  const members = agents.filter((_, i) => (i + r) % 2 === 0 || i % ROOMS === r).map((a) => a.id);
  const room = await http('POST', '/rooms', { body: { slug: `soak-${suffix}-${r}`, name: `Soak ${r}`, members }, headers: { 'x-agent-id': admin.id } });
  rooms.push(room.id);
  for (const agent of agents) (members.includes(agent.id) ? agent.rooms : agent.foreignRooms).push(room.id);
}

// ---- the churn ------------------------------------------------------------------------------------

const stats = { cycles: 0, abrupt: 0, sent: 0, received: 0, forbidden: 0, history: 0, failures: 0, ackErrors: {} };
const failureSamples = [];
let running = false;

function once(socket, event, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout waiting for ${event}`)), timeoutMs);
    socket.once(event, (payload) => {
      clearTimeout(timer);
      resolve(payload);
    });
    socket.once('connect_error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

async function ack(socket, event, payload, expectedError) {
  const answer = await socket.timeout(10_000).emitWithAck(event, payload);
  if (answer?.error && answer.error.code !== expectedError) {
    stats.ackErrors[answer.error.code] = (stats.ackErrors[answer.error.code] ?? 0) + 1;
    throw new Error(`${event}: ${answer.error.code} ${answer.error.message}`);
  }
  return answer;
}

async function cycle(agent) {
  const socket = io(`${url}/agents`, { transports: ['websocket'], query: { token: agent.jwt }, reconnection: false, forceNew: true, timeout: 10_000 });
  socket.on('message:new', () => stats.received++);
  try {
    await once(socket, 'agent:hello-ack');
    if (Math.random() < 0.1) {
      stats.abrupt++; // gone without leaving anything: the server cleans up on disconnect
      return;
    }
    const roomId = pick(agent.rooms);
    await ack(socket, 'room:join', { roomId });
    for (let i = 1 + Math.floor(Math.random() * 3); i > 0; i--) {
      const clientMsgId = Math.random() < 0.5 ? randomUUID() : undefined;
      await ack(socket, 'message:send', { roomId, body: `soak ${stats.cycles} ${'x'.repeat(Math.floor(Math.random() * 512))}`, clientMsgId });
      stats.sent++;
    }
    if (agent.foreignRooms.length > 0 && Math.random() < 0.2) {
      await ack(socket, 'message:send', { roomId: pick(agent.foreignRooms), body: 'not a member' }, 'FORBIDDEN');
      stats.forbidden++;
    }
    await ack(socket, 'message:history', { roomId, limit: 20 });
    stats.history++;
    await sleep(Math.random() * 2 * DWELL_MS); // connected, receiving the rooms' traffic
    await ack(socket, 'room:leave', { roomId });
  } finally {
    socket.disconnect();
    stats.cycles++;
  }
}

async function client(index) {
  const agent = agents[index % agents.length];
  while (running) {
    try {
      await cycle(agent);
    } catch (err) {
      stats.failures++;
      if (failureSamples.length < 10) failureSamples.push(err instanceof Error ? err.message : String(err));
    }
    await sleep(Math.random() * 2 * PAUSE_MS);
  }
}

async function churn(ms) {
  running = true;
  const workers = Array.from({ length: CLIENTS }, (_, i) => client(i));
  await sleep(ms);
  running = false;
  await Promise.all(workers);
}

/**
 * Rounds of `BURST` connections opened together (in waves of 200), each waiting for its
 * `agent:hello-ack`, then all closed: the shape after which the server was seen holding 170 to 210 MB.
 */
async function burstRound() {
  const sockets = [];
  for (let start = 0; start < BURST; start += 200) {
    const wave = Array.from({ length: Math.min(200, BURST - start) }, (_, i) => {
      const agent = agents[(start + i) % agents.length];
      const socket = io(`${url}/agents`, { transports: ['websocket'], query: { token: agent.jwt }, reconnection: false, forceNew: true, timeout: 20_000 });
      sockets.push(socket);
      return once(socket, 'agent:hello-ack', 20_000);
    });
    const results = await Promise.allSettled(wave);
    for (const r of results) {
      if (r.status === 'rejected') {
        stats.failures++;
        if (failureSamples.length < 10) failureSamples.push(`burst: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`);
      }
    }
  }
  stats.burstConnections = (stats.burstConnections ?? 0) + sockets.length;
  for (const socket of sockets) socket.disconnect();
}

// ---- sampling and verdict -----------------------------------------------------------------------

const samples = [];
const started = Date.now();
async function sample(phase, gc = true) {
  const server = await serverSample(gc);
  const metrics = await http('GET', '/metrics');
  const directory = await http('GET', '/api/companies/default/agents/directory', { jwt: admin.jwt });
  const row = {
    phase,
    t: Math.round((Date.now() - started) / 1000),
    heapUsed: server.heapUsed,
    heapTotal: server.heapTotal,
    external: server.external,
    rss: server.rss,
    vmRss: vmRssBytes(),
    metricsHeapUsed: metricValue(metrics, 'nodejs_heap_size_used_bytes'),
    agentsConnected: metricValue(metrics, 'service_agents_connected'),
    sockets: server.sockets,
    rooms: server.rooms,
    engineClients: server.engineClients,
    resources: server.resources,
    online: directory.agents.filter((a) => a.online).length,
    cycles: stats.cycles,
  };
  samples.push(row);
  console.log(`${phase.padEnd(9)} t=${String(row.t).padStart(4)}s heap ${MiB(row.heapUsed).padStart(6)} MiB  rss ${MiB(row.rss).padStart(6)} MiB  sockets ${String(row.sockets).padStart(3)}  rooms ${String(row.rooms).padStart(4)}  engine ${String(row.engineClients).padStart(3)}  online ${String(row.online).padStart(2)}  cycles ${row.cycles}`);
  return row;
}

/** After the clients stopped: the server has processed every disconnect (sockets 0), then settle. */
async function quiesce() {
  const deadline = Date.now() + 30_000;
  while ((await serverSample(false)).engineClients > 0 && Date.now() < deadline) await sleep(200);
  await sleep(2000); // per-socket rate-limit entries expire after their 1 s window
}

let verdict = { ok: false };
try {
  console.log(`soak: ${minutes} min, ${CLIENTS} clients over ${AGENTS} agents and ${ROOMS} rooms, dwell ~${DWELL_MS} ms, pause ~${PAUSE_MS} ms, sample every ${sampleMs / 1000} s, warm-up ${warmupMs / 1000} s; server pid ${pid}`);
  await sample('start');
  await churn(warmupMs);
  await quiesce();
  const baseline = await sample('baseline');
  const baselineObjects = opts.snapshots ? await heapObjectCounts('baseline') : null;

  running = true;
  const workers = Array.from({ length: CLIENTS }, (_, i) => client(i));
  const end = Date.now() + durationMs;
  while (Date.now() < end) {
    await sleep(Math.min(sampleMs, end - Date.now()));
    if (serverExited) throw new Error(`server exited: ${JSON.stringify(serverExited)}`);
    await sample('churn');
  }
  running = false;
  await Promise.all(workers);
  for (let round = 1; BURST > 0 && round <= BURST_ROUNDS; round++) {
    await burstRound();
    await quiesce();
    await sample(`burst-${round}`);
  }
  await quiesce();
  const final = await sample('final');
  const finalObjects = baselineObjects ? await heapObjectCounts('final') : null;
  const retained = finalObjects
    ? Object.fromEntries(PER_CONNECTION_OBJECTS.map((name) => [name, { baseline: baselineObjects.counts[name] ?? 0, final: finalObjects.counts[name] ?? 0 }]))
    : null;
  if (finalObjects) {
    console.log(`heap snapshot: ${MiB(baselineObjects.bytes)} MiB of live objects at baseline, ${MiB(finalObjects.bytes)} MiB at the end`);
    console.log(`per-connection objects (baseline -> final): ${Object.entries(retained).map(([n, c]) => `${n} ${c.baseline}->${c.final}`).join(', ')}`);
    console.log(`grown most: ${grownObjects(baselineObjects, finalObjects, 8).map((r) => `${r.name} +${r.delta}`).join(', ')}`);
  }

  const during = samples.filter((s) => s.phase === 'churn');
  const slope = (() => {
    // Least squares on the post-GC heap during the churn, in MiB per minute.
    if (during.length < 2) return 0;
    const n = during.length;
    const mx = during.reduce((a, s) => a + s.t, 0) / n;
    const my = during.reduce((a, s) => a + s.heapUsed, 0) / n;
    const num = during.reduce((a, s) => a + (s.t - mx) * (s.heapUsed - my), 0);
    const den = during.reduce((a, s) => a + (s.t - mx) ** 2, 0);
    return den === 0 ? 0 : (num / den) * 60 / 1024 / 1024;
  })();
  const checks = {
    heap: final.heapUsed - baseline.heapUsed <= HEAP_TOLERANCE(baseline.heapUsed),
    rooms: final.rooms === baseline.rooms,
    sockets: final.sockets === 0 && baseline.sockets === 0,
    engineClients: final.engineClients === 0,
    agentsConnectedGauge: final.agentsConnected === 0,
    presence: final.online === 0,
    // Timers and sockets the event loop holds: back where they were (a leaked interval or socket stays).
    activeResources: JSON.stringify(final.resources) === JSON.stringify(baseline.resources),
    // A leak leaves an object per connection (thousands); a timer or two alive at the moment of the
    // snapshot is not one. So a per-connection kind may grow by at most 1 per 100 connections made.
    ...(retained ? { retainedObjects: Object.values(retained).every((c) => c.final - c.baseline <= retainedAllowance()) } : {}),
    noFailures: stats.failures === 0,
  };
  verdict = {
    ok: Object.values(checks).every(Boolean),
    checks,
    heapDeltaMiB: Number(MiB(final.heapUsed - baseline.heapUsed)),
    heapToleranceMiB: Number(MiB(HEAP_TOLERANCE(baseline.heapUsed))),
    heapSlopeMiBPerMinuteDuringChurn: Number(slope.toFixed(2)),
    peakSockets: Math.max(...during.map((s) => s.sockets), 0),
    peakRooms: Math.max(...during.map((s) => s.rooms), 0),
    activeResources: { baseline: baseline.resources, final: final.resources },
    ...(retained ? { retainedObjects: retained, grownObjects: grownObjects(baselineObjects, finalObjects) } : {}),
    ...(BURST > 0 ? { burst: { connections: BURST, rounds: BURST_ROUNDS, rssMiB: samples.filter((x) => x.phase.startsWith('burst') || x.phase === 'baseline' || x.phase === 'final').map((x) => ({ phase: x.phase, heapMiB: Number(MiB(x.heapUsed)), heapTotalMiB: Number(MiB(x.heapTotal)), externalMiB: Number(MiB(x.external)), rssMiB: Number(MiB(x.rss)) })) } } : {}),
  };
  console.log(`\nstats: ${JSON.stringify(stats)}${failureSamples.length ? `\nfailures: ${failureSamples.join(' | ')}` : ''}`);
  console.log(`verdict: ${verdict.ok ? 'OK' : 'FAILED'} ${JSON.stringify(verdict)}`);
} catch (err) {
  console.error(`soak failed: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  running = false;
  const outFile = opts.out ?? join(ROOT, 'bench', 'results', `soak-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(outFile, '..'), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify({ options: { minutes, clients: CLIENTS, agents: AGENTS, rooms: ROOMS, dwellMs: DWELL_MS, pauseMs: PAUSE_MS, sampleMs, warmupMs, burst: BURST, burstRounds: BURST_ROUNDS, snapshots: opts.snapshots }, node: process.version, stats, verdict, samples }, null, 2)}\n`);
  console.log(`report: ${outFile}`);
  if (!serverExited) {
    child.send({ type: 'close' });
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(20_000)]);
    if (!serverExited) child.kill('SIGKILL');
  }
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(verdict.ok ? 0 : 1);
}
