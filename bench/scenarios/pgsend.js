import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabase } from '../lib/postgres.js';
import { summedCpu } from '../lib/processes.js';
import { startRedis } from '../lib/redis.js';
import { RoomLoad, sendersOf } from '../lib/room-load.js';
import { describe, searchMaxRates } from '../lib/search.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';
import { baselineClients, serviceClients } from './rooms.js';

/** The rate at which delivery latency is compared with R1's (the target: p50 at most 3 x R1's). */
const LATENCY_RATE = 1000;

/** The shapes: scenario 1 (rooms of 10) and 2 (rooms of 100), each with 1 and 2 sending connections per room. */
const SHAPES = [
  { label: 'rooms of 10, 1 sender', roomSize: 10, rooms: 10, senders: 1, start: 500 },
  { label: 'rooms of 10, 2 senders', roomSize: 10, rooms: 10, senders: 2, start: 500 },
  { label: 'rooms of 100, 1 sender', roomSize: 100, rooms: 2, senders: 1, start: 60 },
  { label: 'rooms of 100, 2 senders', roomSize: 100, rooms: 2, senders: 2, start: 60 },
];

/**
 * What one flush of PostgreSQL's WAL costs on this disk, the floor of a commit with
 * `synchronous_commit` on: an 8 kB write and fdatasync (PostgreSQL's default wal_sync_method) in a
 * loop for `ms`, on the file system of the bench's temporary directory (pg_test_fsync's "one 8kB
 * write" line, in a fraction of its time). The median, in microseconds.
 */
function fsyncCost(dir, log, ms = 500) {
  const path = join(dir, 'fsync-probe');
  const fd = openSync(path, 'w');
  const page = Buffer.alloc(8192, 1);
  const times = [];
  try {
    const until = performance.now() + ms;
    while (performance.now() < until || times.length < 5) {
      const t0 = performance.now();
      writeSync(fd, page, 0, page.length, 0);
      fdatasyncSync(fd);
      times.push((performance.now() - t0) * 1000);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  times.sort((a, b) => a - b);
  const us = times[Math.floor(times.length / 2)];
  log(`fsync: an 8 kB write + fdatasync takes ${(us / 1000).toFixed(2)} ms (median of ${times.length}; p90 ${(times[Math.floor(times.length * 0.9)] / 1000).toFixed(2)} ms): the floor of one commit with synchronous_commit on`);
  return us;
}

/**
 * "PostgreSQL at the ceiling of its design": the service's send path on PostgreSQL (one
 * node, a fresh database, `synchronous_commit` on) against the same service on SQLite and against
 * R3 on PostgreSQL (persisted-relay.js with BASELINE_PG_URL: R1 plus the same inserts, `seq` and
 * search entry, group-committed the same way), interleaved, for rooms of 10 and of 100 with 1 and 2
 * senders per room. Targets: max rate at least 0.8 x R3-on-PostgreSQL and 0.5 x SQLite; delivery
 * p50 at 1,000 msg/s (rooms of 10, 2 senders) at most 3 x R1's.
 */
export async function pgSendScenario(bench) {
  const { quick, tmp, log } = bench;
  const serviceDb = await createDatabase();
  if (serviceDb.error) return { error: serviceDb.error };
  const r3Db = await createDatabase();
  if (r3Db.error) {
    await serviceDb.drop();
    return { error: r3Db.error };
  }
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  const allClients = [];
  const dropLater = [serviceDb, r3Db];
  let redis = null;
  try {
    const fsyncUs = fsyncCost(tmp, log);
    const pgService = await startService({ name: 'service-pg', databaseUrl: serviceDb.url, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(pgService.proc);
    const sqliteService = await startService({ name: 'service-sqlite', databaseUrl: `sqlite:${join(tmp, 'pgsend.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(sqliteService.proc);
    const r3 = await startBaseline({ name: 'r3-pg', script: 'bench/baselines/persisted-relay.js', env: { BASELINE_PG_URL: r3Db.url } });
    procs.push(r3.proc);
    // --compare-dist: another build on PostgreSQL too (e.g. before a change of the send path), interleaved.
    let compare = null;
    if (bench.compareDist) {
      const compareDb = await createDatabase();
      if (compareDb.error) throw new Error(compareDb.error);
      dropLater.push(compareDb);
      compare = await startService({ name: 'compare-pg', dist: bench.compareDist, databaseUrl: compareDb.url, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
      procs.push(compare.proc);
    }
    const r1 = await startBaseline({ name: 'r1', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' } });
    procs.push(r1.proc);
    // Two nodes on one PostgreSQL database and a private Redis, a room's members alternating between
    // them (so with 2 senders, one sends on each node), pinned to the same core as the others.
    let twoNodes = null;
    const started = await startRedis();
    if (started.error) log(`two nodes: not run (${started.error})`);
    else {
      redis = started;
      const pairDb = await createDatabase();
      if (pairDb.error) throw new Error(pairDb.error);
      dropLater.push(pairDb);
      const common = { databaseUrl: pairDb.url, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir, redisUrl: redis.url };
      const a = await startService({ name: 'pg-node-a', ...common }); // migrates first
      procs.push(a.proc);
      const b = await startService({ name: 'pg-node-b', ...common });
      procs.push(b.proc);
      twoNodes = { a, b, cpu: summedCpu([a.proc, b.proc]) };
    }

    // Quick (CI): about 45 s in all, three steps per target and shape.
    const durationMs = quick ? 300 : 3000;
    const drainMs = quick ? 500 : 2000;
    const shapes = [];
    const bySize = new Map();
    for (const shape of SHAPES) {
      // One set of connections per room size and target; the sender count only picks who sends.
      if (!bySize.has(shape.roomSize)) {
        const fixture = { rooms: shape.rooms, roomSize: shape.roomSize, mint };
        const sets = {
          'svc-pg': { proc: pgService.proc, set: await serviceClients(pgService, fixture) },
          'svc-sqlite': { proc: sqliteService.proc, set: await serviceClients(sqliteService, fixture) },
          'R3-pg': { proc: r3.proc, set: await baselineClients(r3.url, fixture) },
          R1: { proc: r1.proc, set: await baselineClients(r1.url, fixture) },
          ...(compare ? { 'compare-pg': { proc: compare.proc, set: await serviceClients(compare, fixture) } } : {}),
          ...(twoNodes ? { 'pg-2nodes': { proc: { cpu: twoNodes.cpu }, set: await serviceClients(twoNodes.a, fixture, [twoNodes.a.url, twoNodes.b.url]) } } : {}),
        };
        for (const { set } of Object.values(sets)) allClients.push(...set.clients);
        bySize.set(shape.roomSize, sets);
      }
      const sets = bySize.get(shape.roomSize);
      const loads = Object.fromEntries(Object.entries(sets).map(([name, { proc, set }]) => [name, new RoomLoad({ ...set, senders: sendersOf(set.roomOf, shape.senders), serverCpu: () => proc.cpu() })]));
      log(`-- ${shape.label}`);
      // Two nodes where both send (2 senders per room).
      const withPair = twoNodes !== null && shape.senders === 2;
      const searched = ['svc-pg', 'svc-sqlite', 'R3-pg', ...(compare ? ['compare-pg'] : []), ...(withPair ? ['pg-2nodes'] : [])];
      for (const name of searched) await loads[name].step({ rate: shape.start / 2, durationMs: quick ? 200 : 1500, drainMs });
      const found = await searchMaxRates(
        searched.map((name) => ({ name, run: (rate) => loads[name].step({ rate, durationMs, drainMs }) })),
        quick
          ? { start: shape.start, growth: 2, precision: 1.5, confirmFail: false, maxSteps: 3, log }
          : { start: shape.start, growth: 1.5, precision: 1.1, confirmFail: true, maxSteps: 14, log },
      );
      const max = Object.fromEntries(found.map((f) => [f.name, f.maxRate]));
      const result = {
        label: shape.label,
        roomSize: shape.roomSize,
        rooms: shape.rooms,
        senders: shape.senders,
        maxRate: max,
        ratio: {
          // Targets: >= 0.8 and >= 0.5.
          vsR3pg: max['R3-pg'] > 0 ? max['svc-pg'] / max['R3-pg'] : null,
          vsSqlite: max['svc-sqlite'] > 0 ? max['svc-pg'] / max['svc-sqlite'] : null,
          ...(compare ? { vsCompare: max['compare-pg'] > 0 ? max['svc-pg'] / max['compare-pg'] : null } : {}),
          ...(withPair ? { twoNodesVsOne: max['svc-pg'] > 0 ? max['pg-2nodes'] / max['svc-pg'] : null } : {}),
        },
        atMax: Object.fromEntries(found.map((f) => [f.name, f.atMax])),
        steps: Object.fromEntries(found.map((f) => [f.name, f.steps])),
      };
      if (shape.roomSize === 10 && shape.senders === 2) {
        result.atLatencyRate = {};
        for (const name of ['svc-pg', 'R1', 'R3-pg', 'svc-sqlite', ...(compare ? ['compare-pg'] : []), ...(withPair ? ['pg-2nodes'] : [])]) {
          result.atLatencyRate[name] = await loads[name].step({ rate: LATENCY_RATE, durationMs, drainMs });
          log(`${name.padEnd(10)} ${LATENCY_RATE} msg/s  ${describe(result.atLatencyRate[name])}`);
        }
        const p50 = (name) => result.atLatencyRate[name].delivery.p50;
        // Target: <= 3.
        result.ratio.deliveryP50VsR1 = p50('R1') ? p50('svc-pg') / p50('R1') : null;
        // The floor of the design: R3 pays the same commit, flush included.
        result.ratio.deliveryP50VsR3pg = p50('R3-pg') ? p50('svc-pg') / p50('R3-pg') : null;
        if (withPair) result.ratio.twoNodesDeliveryP50VsR1 = p50('R1') ? p50('pg-2nodes') / p50('R1') : null;
      }
      const r = (v) => (v === null || v === undefined ? '-' : v.toFixed(2));
      log(`== ${shape.label}: PostgreSQL ${max['svc-pg']} msg/s = ${r(result.ratio.vsR3pg)} x R3-pg (${max['R3-pg']}; target 0.8), ${r(result.ratio.vsSqlite)} x SQLite (${max['svc-sqlite']}; target 0.5)`
        + (compare ? `, ${r(result.ratio.vsCompare)} x --compare-dist on PostgreSQL (${max['compare-pg']})` : '')
        + (withPair ? `; two nodes ${max['pg-2nodes']} msg/s = ${r(result.ratio.twoNodesVsOne)} x one` : '')
        + (result.ratio.deliveryP50VsR1 !== undefined ? `; delivery p50 at ${LATENCY_RATE} msg/s ${r(result.ratio.deliveryP50VsR1)} x R1's (target 3), ${r(result.ratio.deliveryP50VsR3pg)} x R3-pg's` : '')
        + (result.ratio.twoNodesDeliveryP50VsR1 !== undefined ? `, two nodes ${r(result.ratio.twoNodesDeliveryP50VsR1)} x R1's` : ''));
      shapes.push(result);
    }
    return { fsyncUs, latencyRate: LATENCY_RATE, stepDurationMs: durationMs, shapes };
  } finally {
    for (const c of allClients) c.close();
    for (const p of procs) await p.stop();
    for (const db of dropLater) await db.drop().catch(() => {});
    await redis?.stop();
  }
}
