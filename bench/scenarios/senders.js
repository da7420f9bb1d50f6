import { join } from 'node:path';
import { RoomLoad } from '../lib/room-load.js';
import { describe, searchMaxRates } from '../lib/search.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';
import { baselineClients, serviceClients } from './rooms.js';

/** The rate at which delivery latency is compared (the group-commit spacing at moderate load). */
const MODERATE_RATE = 500;

const SHAPES = [
  { roomSize: 10, senders: 1, startRate: 400 },
  { roomSize: 10, senders: 2, startRate: 400 },
  { roomSize: 100, senders: 1, startRate: 100 },
  { roomSize: 100, senders: 2, startRate: 100 },
];

/**
 * Scenario 13: one room, and only one or two of its members send, open loop (a fixed
 * rate whatever the acknowledgements do), so each sending connection carries half or all of the
 * load: what pipelining one connection's sends is for. For each shape, the highest rate with ack
 * p99 < 50 ms and no loss, interleaved with R1 driven by the same senders, then one step each at
 * 500 msg/s for the delivery latency to the other members.
 */
export async function sendersScenario(bench) {
  const { quick, tmp, log } = bench;
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  const allClients = [];
  try {
    const service = await startService({ name: 'service-senders', databaseUrl: `sqlite:${join(tmp, 'senders.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(service.proc);
    const r1 = await startBaseline({ name: 'r1', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' } });
    procs.push(r1.proc);
    const other = bench.compareDist
      ? await startService({ name: 'compare-senders', dist: bench.compareDist, databaseUrl: `sqlite:${join(tmp, 'senders-compare.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir })
      : null;
    if (other) procs.push(other.proc);
    const durationMs = quick ? 600 : 3000;
    const drainMs = quick ? 1000 : 2000;
    const shapes = [];
    for (const shape of SHAPES) {
      const label = `room of ${shape.roomSize}, ${shape.senders} sender${shape.senders > 1 ? 's' : ''}`;
      log(`-- ${label}`);
      const senders = Array.from({ length: shape.senders }, (_, i) => i);
      const sets = [
        { name: 'service', proc: service.proc, set: await serviceClients(service, { rooms: 1, roomSize: shape.roomSize, mint }) },
        { name: 'R1', proc: r1.proc, set: await baselineClients(r1.url, { rooms: 1, roomSize: shape.roomSize, mint }) },
      ];
      if (other) sets.splice(1, 0, { name: 'compare', proc: other.proc, set: await serviceClients(other, { rooms: 1, roomSize: shape.roomSize, mint }) });
      const targets = sets.map(({ name, proc, set }) => {
        allClients.push(...set.clients);
        return { name, load: new RoomLoad({ ...set, senders, serverCpu: () => proc.cpu() }) };
      });
      for (const t of targets) await t.load.step({ rate: shape.startRate / 2, durationMs: quick ? 300 : 1500, drainMs });
      const found = await searchMaxRates(
        targets.map((t) => ({ name: t.name, run: (rate) => t.load.step({ rate, durationMs, drainMs }) })),
        quick
          ? { start: shape.startRate, growth: 2, precision: 1.5, confirmFail: false, maxSteps: 6, log }
          : { start: shape.startRate, growth: 1.5, precision: 1.1, confirmFail: true, maxSteps: 14, log },
      );
      const atModerate = {};
      for (const t of targets) {
        // After the search's last (failed, overloaded) step a target may still be working off its
        // backlog: the moderate step measures latency, so it starts once the target is quiet.
        await t.load.quiesce();
        atModerate[t.name] = await t.load.step({ rate: MODERATE_RATE, durationMs, drainMs });
        log(`${t.name.padEnd(8)} ${String(MODERATE_RATE).padStart(6)} msg/s  (moderate rate) ${describe(atModerate[t.name])}`);
      }
      for (const t of targets) for (const c of t.load.clients) c.close();
      const byName = Object.fromEntries(found.map((f) => [f.name, f]));
      const svc = byName.service.maxRate;
      const p50 = (name) => atModerate[name]?.delivery.p50 ?? null;
      shapes.push({
        label,
        ...shape,
        maxRate: { service: svc, R1: byName.R1.maxRate, ...(other ? { compare: byName.compare.maxRate } : {}) },
        ratio: byName.R1.maxRate > 0 ? svc / byName.R1.maxRate : null,
        moderateRate: MODERATE_RATE,
        atModerateRate: atModerate,
        deliveryP50Ratio: p50('service') !== null && p50('R1') ? p50('service') / p50('R1') : null,
        atMax: Object.fromEntries(found.map((f) => [f.name, f.atMax])),
        steps: Object.fromEntries(found.map((f) => [f.name, f.steps])),
      });
    }
    return { stepDurationMs: durationMs, ...(other ? { compareDist: bench.compareDist } : {}), shapes };
  } finally {
    for (const c of allClients) c.close();
    for (const p of procs) await p.stop();
  }
}
