#!/usr/bin/env node
/**
 * `node bench/cpu-per-message.js [--rate=1000] [--seconds=5] [--rounds=4] [--room-size=10] [--rooms=10] [--senders=N] [--compare-dist=../old/dist,../other/dist] [--r3] [--r3-checks] [--r3-variants] [--postgres]`
 *
 * Server CPU per `message:send` at one fixed rate, every member of every room sending in turn (as
 * in scenario 1; `--senders=N`: the first N members of each room only), in alternating rounds: the service (dist/), optionally another build of it
 * (`--compare-dist`, e.g. a worktree of an older commit), and R1. CPU comes from /proc and is read
 * after each step's last delivery, so a backlog on a loaded machine is still counted. Made for
 * comparing builds on a shared, noisy machine, where the rate searches of `npm run bench` are not
 * reproducible but CPU time per message is.
 */
import { basename, dirname, join, resolve } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { createDatabase } from './lib/postgres.js';
import { tmpdir } from 'node:os';
import { pinSelf } from './lib/processes.js';
import { RoomLoad } from './lib/room-load.js';
import { describe } from './lib/search.js';
import { jwtMinter, newJwtSecret, startBaseline, startService } from './lib/service.js';
import { baselineClients, serviceClients } from './scenarios/rooms.js';
import { arg } from './lib/args.js';

const rate = Number(arg('rate', 1000));
const seconds = Number(arg('seconds', 5));
const rounds = Number(arg('rounds', 4));
const roomSize = Number(arg('room-size', 10));
const rooms = Number(arg('rooms', 10));
const compareDist = arg('compare-dist', null);
const sendersPerRoom = arg('senders', null);
/** Client indices of the first `sendersPerRoom` members of each room (clients are listed room by room). */
const senders = sendersPerRoom === null ? null : Array.from({ length: rooms }, (_, r) => Array.from({ length: Number(sendersPerRoom) }, (_, i) => r * roomSize + i)).flat();

pinSelf();
const tmp = mkdtempSync(join(tmpdir(), 'ams-cpu-'));
const jwtSecret = newJwtSecret();
const mint = jwtMinter(jwtSecret);
const procs = [];
const clients = [];
const onPostgres = process.argv.includes('--postgres');
const databases = [];
try {
  const targets = [];
  const add = async (name, proc, set) => {
    procs.push(proc);
    clients.push(...set.clients);
    targets.push({ name, proc, load: new RoomLoad({ ...set, senders, serverCpu: () => proc.cpu() }), perMessageUs: [], deliveryP50: [] });
  };
  // --postgres: every service and R3 on a fresh PostgreSQL database of its own.
  const databaseFor = async (file) => {
    if (!onPostgres) return `sqlite:${join(tmp, file)}`;
    const created = await createDatabase();
    if (created.error) throw new Error(created.error);
    databases.push(created);
    return created.url;
  };
  const service = await startService({ name: 'service', databaseUrl: await databaseFor('s.sqlite'), jwtSecret });
  await add('service', service.proc, await serviceClients(service, { rooms, roomSize, mint }));
  // Several builds: --compare-dist=a/dist,b/dist, named after their folder.
  for (const [i, dist] of (compareDist ?? '').split(',').filter(Boolean).entries()) {
    const name = basename(dirname(resolve(dist))).slice(0, 12) || `compare${i + 1}`;
    const other = await startService({ name, dist, databaseUrl: await databaseFor(`c${i}.sqlite`), jwtSecret });
    await add(name, other.proc, await serviceClients(other, { rooms, roomSize, mint }));
  }
  const r1 = await startBaseline({ name: 'r1', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' } });
  await add('R1', r1.proc, await baselineClients(r1.url, { rooms, roomSize, mint }));
  if (process.argv.includes('--r3')) {
    const r3Db = onPostgres ? { BASELINE_PG_URL: await databaseFor('') } : { BASELINE_DB: join(tmp, 'r3.sqlite') };
    const r3 = await startBaseline({ name: 'r3', script: 'bench/baselines/persisted-relay.js', env: r3Db });
    await add('R3', r3.proc, await baselineClients(r3.url, { rooms, roomSize, mint }));
  }
  // --r3-checks: R3 plus the checks the specification requires of every send (BASELINE_CHECKS=spec).
  if (process.argv.includes('--r3-checks')) {
    const r3Db = onPostgres ? { BASELINE_PG_URL: await databaseFor('checks') } : { BASELINE_DB: join(tmp, 'r3-checks.sqlite') };
    const r3 = await startBaseline({ name: 'r3-checks', script: 'bench/baselines/persisted-relay.js', env: { ...r3Db, BASELINE_CHECKS: 'spec' } });
    await add('R3 checks', r3.proc, await baselineClients(r3.url, { rooms, roomSize, mint }));
  }
  // --r3-variants: R3 with its writes on the event loop, with Phase 1's writes only (message and
  // audit record), and both (the reference build's write design): what the write design costs;
  // and R3 as it was before Phase 3 (one audit index, SQLite's own checkpoints, Phase 2's message),
  // or today's R3 delivering Phase 2's message.
  if (process.argv.includes('--r3-variants')) {
    const variants = [
      ['R3 phase2', { BASELINE_SCHEMA: 'phase2' }],
      ['R3 wire2', { BASELINE_WIRE: 'phase2' }],
      ['R3 loop', { BASELINE_WRITER: 'loop' }],
      ['R3 phase1', { BASELINE_WRITES: 'phase1' }],
      ['R3 p1 loop', { BASELINE_WRITER: 'loop', BASELINE_WRITES: 'phase1' }],
    ];
    for (const [i, [name, env]] of variants.entries()) {
      const r3 = await startBaseline({ name: `r3-${i}`, script: 'bench/baselines/persisted-relay.js', env: { ...env, BASELINE_DB: join(tmp, `r3-${i}.sqlite`) } });
      await add(name, r3.proc, await baselineClients(r3.url, { rooms, roomSize, mint }));
    }
  }

  for (const t of targets) await t.load.step({ rate: rate / 2, durationMs: 2000, drainMs: 3000 }); // warm-up
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      const before = t.proc.cpu();
      const result = await t.load.step({ rate, durationMs: seconds * 1000, drainMs: 10_000 });
      await t.load.quiesce();
      const us = ((t.proc.cpu() - before) * 1e6) / result.sent;
      t.perMessageUs.push(us);
      t.deliveryP50.push(result.delivery.p50);
      console.log(`round ${round + 1} ${t.name.padEnd(12)} ${Math.round(us)} us/message, delivery p50 ${result.delivery.p50?.toFixed(2)} ms  ${describe(result)}`);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const r1Median = median(targets.find((t) => t.name === 'R1').perMessageUs);
  console.log(`\n${rate} msg/s, ${rooms} rooms of ${roomSize}, ${rounds} rounds of ${seconds} s: server CPU per message (median; x R1)`);
  for (const t of targets) {
    const m = median(t.perMessageUs);
    console.log(`${t.name.padEnd(12)} ${Math.round(m)} us  (${(m / r1Median).toFixed(2)} x R1; rounds ${t.perMessageUs.map(Math.round).join(', ')}); delivery p50 median ${median(t.deliveryP50).toFixed(2)} ms`);
  }
} finally {
  for (const c of clients) c.close();
  for (const p of procs) await p.stop();
  for (const d of databases) await d.drop().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
}
