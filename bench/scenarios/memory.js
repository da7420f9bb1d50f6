import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';
import { SioClient, connectAll } from '../lib/sio-client.js';

const NSP = '/agents';
const ROOM_SIZE = 50;

/** The median of a few RSS samples, taken once the process has settled. */
export async function settledRss(proc, samples = 5) {
  await sleep(1500);
  const values = [];
  for (let i = 0; i < samples; i++) {
    values.push(proc.rss());
    await sleep(200);
  }
  return values.sort((a, b) => a - b)[Math.floor(samples / 2)];
}

/**
 * `connections` agents in rooms of ROOM_SIZE (auto-joined on connect), written by one service
 * process that is then stopped: a fresh one on the same database is measured, so that the garbage
 * of thousands of REST calls does not sit in the "before" figure.
 */
export async function idleFixtures(bench, { name, connections, procs, env = {} }) {
  const databaseUrl = `sqlite:${join(bench.tmp, `${name}.sqlite`)}`;
  const setup = await startService({ name: `service-${name}-setup`, databaseUrl, jwtSecret: bench.jwtSecret, env });
  procs.push(setup.proc);
  const admin = await setup.api.createAgent('admin');
  const agents = await setup.api.createAgents(connections);
  for (let i = 0; i < connections; i += ROOM_SIZE) {
    await setup.api.createRoom(admin.id, agents.slice(i, i + ROOM_SIZE).map((a) => a.id));
  }
  await setup.proc.stop();
  bench.log(`${connections} agents in rooms of ${ROOM_SIZE} created`);
  return { databaseUrl, admin, agents, roomSize: ROOM_SIZE };
}

async function measure(proc, clients) {
  const before = await settledRss(proc);
  const t0 = performance.now();
  await connectAll(clients, 64);
  const connectSeconds = (performance.now() - t0) / 1000;
  const after = await settledRss(proc);
  const open = clients.filter((c) => c.isOpen()).length;
  if (open !== clients.length) throw new Error(`${clients.length - open} of ${clients.length} connections were dropped while idle`);
  return {
    rssBeforeMiB: Math.round((before / 2 ** 20) * 10) / 10,
    rssAfterMiB: Math.round((after / 2 ** 20) * 10) / 10,
    kbPerConnection: Math.round(((after - before) / clients.length / 1024) * 10) / 10,
    connectsPerSecond: Math.round(clients.length / connectSeconds),
  };
}

/**
 * Scenario 5: resident memory per idle authenticated WebSocket connection: RSS after N
 * connections minus RSS before, over N. Every connection is a distinct agent, member of one room
 * of 50 (auto-joined on connect). R1 holding the same connections is shown for comparison.
 */
export async function memoryScenario(bench) {
  const { quick, log } = bench;
  const connections = quick ? 500 : 5000;
  const mint = jwtMinter(bench.jwtSecret);
  const clients = [];
  const procs = [];
  try {
    const { databaseUrl, admin, agents } = await idleFixtures(bench, { name: 'memory', connections, procs });
    const service = await startService({ name: 'service-memory', databaseUrl, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(service.proc);
    const serviceClients = agents.map((a) => new SioClient(service.url, NSP, { token: mint(a.id) }));
    clients.push(...serviceClients);
    // One connection first: the WebSocket interface must exist (and its code paths are warm).
    const probe = new SioClient(service.url, NSP, { token: mint(admin.id, 'admin') });
    try {
      await probe.connect(5000);
    } catch (err) {
      return { connections, error: `service WebSocket unavailable: ${err.message}` };
    } finally {
      probe.close();
    }
    const svc = await measure(service.proc, serviceClients);
    log(`service  ${svc.kbPerConnection} KB/connection (RSS ${svc.rssBeforeMiB} -> ${svc.rssAfterMiB} MiB, ${svc.connectsPerSecond} connects/s)`);
    for (const c of serviceClients) c.close();
    await service.proc.stop();

    const r1 = await startBaseline({ name: 'r1-memory', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' } });
    procs.push(r1.proc);
    const r1Clients = agents.map((a, i) => new SioClient(r1.url, NSP, { token: mint(a.id), agentId: a.id, rooms: `room-${Math.floor(i / ROOM_SIZE)}` }));
    clients.push(...r1Clients);
    const base = await measure(r1.proc, r1Clients);
    log(`R1       ${base.kbPerConnection} KB/connection (RSS ${base.rssBeforeMiB} -> ${base.rssAfterMiB} MiB)`);
    return { connections, roomSize: ROOM_SIZE, service: svc, R1: base };
  } finally {
    for (const c of clients) c.close();
    for (const p of procs) await p.stop();
  }
}
