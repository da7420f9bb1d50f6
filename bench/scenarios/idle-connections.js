import { spawnSync } from 'node:child_process';
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { newHistogram, recordMs, summarize } from '../lib/histogram.js';
import { connectInspector } from '../lib/inspector.js';
import { RoomLoad, sendersOf } from '../lib/room-load.js';
import { describe } from '../lib/search.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';
import { idleFixtures, settledRss } from './memory.js';
import { baselineClients, serviceClients } from './rooms.js';

const NSP = '/agents';
/** Handshakes per second of the storm, all generators together. */
const HANDSHAKE_RATE = 1000;
/** Connections each generator process holds at most (each is limited by its own file limit too). */
const PER_GENERATOR = 5000;
/** Descriptors left to the service for its database, listener, logs and the room-of-10 step. */
const RESERVE = 1000;
const round1 = (v) => (v === null || v === undefined ? null : Math.round(v * 10) / 10);
const mib = (bytes) => round1(bytes / 2 ** 20);

/** The hard open-file limit of this machine's processes (Node raises its soft limit to it). */
function hardFileLimit() {
  const out = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' });
  const n = Number.parseInt(out.stdout, 10);
  return Number.isFinite(n) ? n : null; // "unlimited" included
}

/** The soft open-file limit a running process got, from /proc (null where /proc is absent). */
function processFileLimit(pid) {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Generator processes, each binding its own loopback source address. */
class Generators {
  constructor(count, firstAddress) {
    this.children = Array.from({ length: count }, () => fork('bench/lib/idle-generator.js', [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
    this.addresses = this.children.map((_, g) => `127.0.0.${firstAddress + g}`);
  }

  async #ask(g, message, type, timeoutMs) {
    const child = this.children[g];
    const reply = once(child, 'message', { signal: AbortSignal.timeout(timeoutMs) });
    child.send(message);
    const [msg] = await reply;
    if (msg.type !== type) throw new Error(`generator ${g}: expected ${type}, got ${msg.type}`);
    return msg;
  }

  /**
   * Opens every connection (queries[k]) at its scheduled time, HANDSHAKE_RATE per second in all,
   * round robin over the generators; hello-ack latency is measured from the scheduled time.
   */
  async storm(url, queries, timeoutMs, proc) {
    const cpu0 = proc.cpu();
    const count = this.children.length;
    const startAt = performance.timeOrigin + performance.now() + 500;
    const interval = 1000 / HANDSHAKE_RATE;
    const replies = await Promise.all(
      this.children.map((_, g) => {
        const mine = [];
        const slots = [];
        for (let k = g; k < queries.length; k += count) {
          mine.push(queries[k]);
          slots.push(startAt + k * interval);
        }
        const budget = slots.length === 0 ? 0 : slots[slots.length - 1] - startAt;
        return this.#ask(g, { type: 'connect', url, nsp: NSP, queries: mine, localAddress: this.addresses[g], slots, timeoutMs }, 'connected', budget + timeoutMs + 10_000);
      }),
    );
    const hist = newHistogram();
    const lagHist = newHistogram();
    let failures = 0;
    let firstError = null;
    let lastAt = startAt;
    for (const r of replies) {
      for (const l of r.latencies) recordMs(hist, l);
      for (const l of r.lags) recordMs(lagHist, l);
      failures += r.failures;
      firstError ??= r.firstError;
      lastAt = Math.max(lastAt, r.lastAt);
    }
    const cpu1 = proc.cpu();
    // Server CPU per handshake: what the storm costs whatever else the machine runs.
    const cpuMsPerHandshake = cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) * 1e6) / queries.length) / 1000;
    return { connectSeconds: round1((lastAt - startAt) / 1000), helloAck: summarize(hist), openLag: summarize(lagHist), cpuMsPerHandshake, connected: queries.length - failures, failures, firstError };
  }

  async open() {
    const counts = await Promise.all(this.children.map((_, g) => this.#ask(g, { type: 'count' }, 'count', 10_000)));
    return counts.reduce((sum, c) => sum + c.open, 0);
  }

  /** Every connection of every generator terminated at the same moment. */
  closeAll() {
    return Promise.all(this.children.map((_, g) => this.#ask(g, { type: 'close' }, 'closed', 30_000)));
  }

  stop() {
    for (const child of this.children) if (child.exitCode === null) child.kill();
  }
}

/** Scenario 1's step (rooms of 10, 2 senders) at 4,000 msg/s on `set`'s clients, after a warm-up at 1,000. */
async function sendStep(set, proc, { quick, stepMs }) {
  const load = new RoomLoad({ ...set, senders: sendersOf(set.roomOf, 2), serverCpu: () => proc.cpu() });
  await load.step({ rate: 1000, durationMs: quick ? 300 : 1500, drainMs: 2000 });
  return load.step({ rate: 4000, durationMs: stepMs, drainMs: 2000 });
}

/** Server CPU (fraction of one core) over `seconds` of nothing but heartbeats. */
async function idleCpu(proc, seconds) {
  const c0 = proc.cpu();
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const c1 = proc.cpu();
  return c0 === null || c1 === null ? null : Math.round(((c1 - c0) / ((performance.now() - t0) / 1000)) * 1000) / 1000;
}

/** How many of `ids` the directory lists online (docs/protocol.md, Directory). */
async function onlineCount(service, adminToken, ids) {
  const body = await service.api.expect(200, 'GET', '/api/companies/default/agents/directory', { headers: { authorization: `Bearer ${adminToken}` } });
  const wanted = new Set(ids);
  return body.agents.filter((a) => wanted.has(a.id) && a.online).length;
}

/** One gauge or counter of the service's /metrics (Prometheus text), or null. */
async function metric(url, name) {
  try {
    const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Live JS heap (bytes) after a full collection forced through the inspector. */
async function heapAfterGc(inspector) {
  await inspector.call('HeapProfiler.collectGarbage');
  return (await inspector.call('Runtime.getHeapUsage')).usedSize;
}

/**
 * After every connection closed: RSS sampled until within 10 % of `rssStart` or 30 s (memory is given
 * back as the collector runs), then a full collection forced through the inspector and RSS again.
 */
async function memoryBack(proc, inspector, rssStart, quick) {
  let rssEnd = await settledRss(proc);
  const memoryDeadline = performance.now() + (quick ? 0 : 30_000);
  while (rssEnd > rssStart * 1.1 && performance.now() < memoryDeadline) rssEnd = await settledRss(proc);
  const heapEnd = await heapAfterGc(inspector);
  const rssAfterGc = await settledRss(proc);
  const ratio = (rss) => Math.round((rss / rssStart) * 100) / 100;
  return { rssEndMiB: mib(rssEnd), rssEndRatio: ratio(rssEnd), heapEnd, rssAfterGcMiB: mib(rssAfterGc), rssAfterGcRatio: ratio(rssAfterGc) };
}

/**
 * Scenario 17: as many idle authenticated connections as one node may hold. The count follows the
 * machine's open-file limit (hard limit less a reserve; quick mode a small count), opened at 1,000
 * handshakes/s by several generator processes from several loopback source addresses. Measured:
 * time to connect all, hello-ack p99 during the storm, KB per connection against R1 at the same
 * count, server CPU while idle, scenario 1's 2-sender room-of-10 step at 4,000 msg/s while they are
 * held, then all disconnected at once: memory back near its start and every agent offline.
 * The service keeps its default configuration except the rate limits and per-agent connection cap
 * the bench raises for every scenario (environment of the child only: no limit of the machine or of
 * this process is changed, so there is nothing to restore).
 */
export async function idleScenario(bench) {
  const { quick, log } = bench;
  const fileLimit = hardFileLimit();
  const connections = quick ? 2000 : Math.max(2000, Math.min(19_000, (fileLimit ?? 20_000) - RESERVE));
  const generatorCount = Math.max(2, Math.ceil(connections / PER_GENERATOR));
  const idleSeconds = quick ? 5 : 30;
  const stepMs = quick ? 1000 : 3000;
  const timeoutMs = 30_000;
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  const generators = [];
  const roomClients = [];
  let inspector = null;
  const result = { connections, fileLimit, generators: generatorCount, handshakeRate: HANDSHAKE_RATE, idleSeconds };
  try {
    const { databaseUrl, admin, agents, roomSize } = await idleFixtures(bench, { name: 'idle', connections, procs });
    result.roomSize = roomSize;
    // The inspector only forces a full collection at the end: what is left then is held, not garbage.
    const service = await startService({ name: 'service-idle', databaseUrl, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir, nodeArgs: ['--inspect=127.0.0.1:0'] });
    procs.push(service.proc);
    inspector = await connectInspector(service.proc);
    result.serviceFileLimit = processFileLimit(service.proc.pid);
    result.connectionCapacity = await metric(service.url, 'service_websocket_connection_capacity');
    const adminToken = mint(admin.id, 'admin');
    const ids = agents.map((a) => a.id);

    // The service: storm, hold, idle, load, disconnect.
    const gens = new Generators(generatorCount, 2);
    generators.push(gens);
    const rssStart = await settledRss(service.proc);
    const storm = await gens.storm(service.url, agents.map((a) => ({ token: mint(a.id) })), timeoutMs, service.proc);
    log(`service  ${storm.connected}/${connections} connected in ${storm.connectSeconds} s, hello-ack p50 ${storm.helloAck.p50} p99 ${storm.helloAck.p99} ms, generator lateness p99 ${storm.openLag.p99} ms, server CPU ${storm.cpuMsPerHandshake} ms per handshake${storm.firstError ? ` (first error: ${storm.firstError})` : ''}`);
    const onlineHeld = await onlineCount(service, adminToken, ids);
    const rssHeld = await settledRss(service.proc);
    // Live JS objects (after a full GC), forced only after both RSS readings so that they are taken
    // as the memory scenario takes them; per connection, against the same after all disconnected.
    const heapHeld = await heapAfterGc(inspector);
    const cpuIdle = await idleCpu(service.proc, idleSeconds); // after the forced GC, not during it
    const openAfterIdle = await gens.open();
    const svc = {
      ...storm,
      onlineHeld,
      connectedGauge: await metric(service.url, 'service_agents_connected'),
      rssStartMiB: mib(rssStart),
      rssHeldMiB: mib(rssHeld),
      kbPerConnection: round1((rssHeld - rssStart) / Math.max(1, storm.connected) / 1024),
      idleCpu: cpuIdle,
      openAfterIdle,
    };
    log(`service  ${svc.kbPerConnection} KB/connection (RSS ${svc.rssStartMiB} -> ${svc.rssHeldMiB} MiB), idle CPU ${cpuIdle} of a core over ${idleSeconds} s, ${onlineHeld} online, ${openAfterIdle} open`);

    const set = await serviceClients(service, { rooms: 10, roomSize: 10, mint });
    roomClients.push(...set.clients);
    svc.step = await sendStep(set, service.proc, { quick, stepMs });
    log(`service  4000 msg/s rooms of 10, 2 senders, while held: ${describe(svc.step)}`);
    for (const c of set.clients) c.close();
    svc.openAfterStep = await gens.open();

    const closedAt = performance.now();
    await gens.closeAll();
    let online = onlineHeld;
    const offlineDeadline = performance.now() + 30_000;
    while (online > 0 && performance.now() < offlineDeadline) {
      await sleep(250);
      online = await onlineCount(service, adminToken, ids);
    }
    svc.onlineAfterClose = online;
    svc.offlineSeconds = round1((performance.now() - closedAt) / 1000);
    const back = await memoryBack(service.proc, inspector, rssStart, quick);
    Object.assign(svc, back);
    svc.heapKbPerConnection = round1((heapHeld - back.heapEnd) / Math.max(1, storm.connected) / 1024);
    svc.connectedGaugeAfterClose = await metric(service.url, 'service_agents_connected');
    log(`service  all closed: ${online} still online after ${svc.offlineSeconds} s, RSS ${svc.rssEndMiB} MiB (${svc.rssEndRatio} x start), ${svc.rssAfterGcMiB} MiB after a full GC (${svc.rssAfterGcRatio} x); JS heap ${svc.heapKbPerConnection} KB per connection held`);
    result.service = svc;
    inspector.close();
    inspector = null;
    gens.stop();
    await service.proc.stop();

    // R1 at the same count, same storm, fresh source addresses (the first run's ports may be in TIME_WAIT);
    // with the inspector as the service, to force the same full collection once all are closed.
    const r1 = await startBaseline({ name: 'r1-idle', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' }, nodeArgs: ['--inspect=127.0.0.1:0'] });
    procs.push(r1.proc);
    inspector = await connectInspector(r1.proc);
    const r1Gens = new Generators(generatorCount, 2 + generatorCount);
    generators.push(r1Gens);
    const r1Start = await settledRss(r1.proc);
    const r1Storm = await r1Gens.storm(r1.url, agents.map((a, i) => ({ token: mint(a.id), agentId: a.id, rooms: `room-${Math.floor(i / roomSize)}` })), timeoutMs, r1.proc);
    const r1Held = await settledRss(r1.proc);
    const base = {
      ...r1Storm,
      rssStartMiB: mib(r1Start),
      rssHeldMiB: mib(r1Held),
      kbPerConnection: round1((r1Held - r1Start) / Math.max(1, r1Storm.connected) / 1024),
      idleCpu: await idleCpu(r1.proc, idleSeconds),
      openAfterIdle: await r1Gens.open(),
    };
    log(`R1       ${base.kbPerConnection} KB/connection (RSS ${base.rssStartMiB} -> ${base.rssHeldMiB} MiB), idle CPU ${base.idleCpu}, connected in ${base.connectSeconds} s, hello-ack p50 ${base.helloAck.p50} p99 ${base.helloAck.p99} ms, generator lateness p99 ${base.openLag.p99} ms, server CPU ${base.cpuMsPerHandshake} ms per handshake`);
    result.R1 = base;
    await r1Gens.closeAll();
    // What the transport alone gives back (the memory target's ceiling).
    Object.assign(base, await memoryBack(r1.proc, inspector, r1Start, quick));
    log(`R1       all closed: RSS ${base.rssEndMiB} MiB (${base.rssEndRatio} x start), ${base.rssAfterGcMiB} MiB after a full GC (${base.rssAfterGcRatio} x)`);
    inspector.close();
    inspector = null;
    r1Gens.stop();
    await r1.proc.stop();

    // R3, the ceiling of the design (R1 plus the service's writes, made its way): the same step alone,
    // then while as many idle connections are held. What holding them costs a bare persisting relay
    // on this machine is what the service's step while held can be held to.
    const r3 = await startBaseline({ name: 'r3-idle', script: 'bench/baselines/persisted-relay.js', env: { BASELINE_DB: join(bench.tmp, 'idle-r3.sqlite') } });
    procs.push(r3.proc);
    const r3Set = await baselineClients(r3.url, { rooms: 10, roomSize: 10, mint });
    roomClients.push(...r3Set.clients);
    const r3Alone = await sendStep(r3Set, r3.proc, { quick, stepMs });
    log(`R3       4000 msg/s rooms of 10, 2 senders, alone: ${describe(r3Alone)}`);
    const r3Gens = new Generators(generatorCount, 2 + 2 * generatorCount);
    generators.push(r3Gens);
    const r3Storm = await r3Gens.storm(r3.url, agents.map((a, i) => ({ token: mint(a.id), agentId: a.id, rooms: `idle-room-${Math.floor(i / roomSize)}` })), timeoutMs, r3.proc);
    const r3Held = await sendStep(r3Set, r3.proc, { quick, stepMs });
    log(`R3       4000 msg/s rooms of 10, 2 senders, while ${r3Storm.connected} held: ${describe(r3Held)}`);
    result.R3 = { connected: r3Storm.connected, stepAlone: r3Alone, stepHeld: r3Held };
    await r3Gens.closeAll();

    // Slopes, projected: what a node would need for 50,000 and 100,000 idle agents.
    const cpuPerConnection = svc.idleCpu === null ? null : svc.idleCpu / Math.max(1, storm.connected);
    result.projection = Object.fromEntries(
      [50_000, 100_000].map((n) => [n, {
        rssMiB: Math.round(svc.rssStartMiB + (svc.kbPerConnection * n) / 1024),
        idleCpu: cpuPerConnection === null ? null : Math.round(cpuPerConnection * n * 1000) / 1000,
      }]),
    );
    result.targets = {
      kbRatio: base.kbPerConnection > 0 ? Math.round((svc.kbPerConnection / base.kbPerConnection) * 100) / 100 : null,
      kbMet: svc.kbPerConnection <= base.kbPerConnection,
      idleCpuMet: svc.idleCpu !== null && svc.idleCpu < 0.05,
      stepMet: svc.step.pass && svc.step.delivery.p99 !== null,
      helloAckMet: storm.failures === 0 && storm.helloAck.p99 !== null && storm.helloAck.p99 < 1000,
      memoryBackMet: svc.rssEndRatio <= 1.1,
      offlineMet: svc.onlineAfterClose === 0,
      heldMet: svc.onlineHeld === connections && svc.openAfterIdle === connections && svc.openAfterStep === connections,
    };
    return result;
  } finally {
    inspector?.close();
    for (const c of roomClients) c.close();
    for (const g of generators) g.stop();
    for (const p of procs) await p.stop();
  }
}
