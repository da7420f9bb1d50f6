import { createDatabase } from '../lib/postgres.js';
import { startRedis } from '../lib/redis.js';
import { RoomLoad } from '../lib/room-load.js';
import { describe } from '../lib/search.js';
import { jwtMinter, startService } from '../lib/service.js';
import { serviceClients } from './rooms.js';

const ROOMS = 30;
const ROOM_SIZE = 10;
/** Messages per second into the rooms on node A (400 with --quick); AMS_BENCH_FANOUT_RATE=n for another. */
const rateOf = (quick) => Number(process.env.AMS_BENCH_FANOUT_RATE ?? (quick ? 400 : 2000));

/**
 * Scenario 26, "work follows members" (docs/scale-out.md, "Fan-out"): three nodes on PostgreSQL and
 * Redis, rooms whose members are all connected to node A, messages sent there. The CPU nodes B and
 * C spend per message, as a share of A's (target <= 5 %): raw, and less what each spends idle over
 * as long (timers, heartbeats), measured just before. The sharded adapter (REDIS_ADAPTER_MODE=auto on
 * Redis >= 7), where B and C hear none of the rooms' broadcasts, only the cluster bus's wake-up
 * hints; then the classic one (every node hears every broadcast) for comparison.
 */
export async function fanoutScenario(bench) {
  const database = await createDatabase();
  if (database.error) return { error: `not available: ${database.error}` };
  const redis = await startRedis();
  if (redis.error) {
    await database.drop();
    return { error: `not available: ${redis.error}` };
  }
  try {
    const sharded = await measure(bench, database, redis, 'auto');
    if (sharded.error) return sharded;
    const classic = await measure(bench, database, redis, 'classic');
    return { ...sharded, classic };
  } finally {
    await redis.stop();
    await database.drop().catch((err) => bench.log(`could not drop the bench database: ${err.message}`));
  }
}

async function measure(bench, database, redis, mode) {
  const { quick, log } = bench;
  const RATE = rateOf(quick);
  const mint = jwtMinter(bench.jwtSecret);
  const nodes = [];
  let clients = [];
  try {
    const common = { databaseUrl: database.url, jwtSecret: bench.jwtSecret, redisUrl: redis.url, profileDir: bench.profileDir, env: { REDIS_ADAPTER_MODE: mode } };
    for (const name of ['node-a', 'node-b', 'node-c']) nodes.push(await startService({ name, ...common })); // A migrates first
    const [a] = nodes;
    const set = await serviceClients(a, { rooms: ROOMS, roomSize: ROOM_SIZE, mint });
    clients = set.clients;
    const load = new RoomLoad(set);
    const durationMs = quick ? 2000 : 8000;
    const cpus = () => nodes.map((n) => n.proc.cpu());
    const spent = (before, after) => after.map((x, i) => (x === null || before[i] === null ? null : x - before[i]));

    await load.step({ rate: RATE, durationMs: 500 }); // warm-up
    // Idle over as long as the step lasts: what B and C spend whatever the traffic.
    const idle0 = cpus();
    const idleStarted = Date.now();
    await new Promise((resolve) => setTimeout(resolve, durationMs + 1000));
    const idleWall = (Date.now() - idleStarted) / 1000;
    const idle = spent(idle0, cpus());

    const cpu0 = cpus();
    const started = Date.now();
    const result = await load.step({ rate: RATE, durationMs });
    const wall = (Date.now() - started) / 1000;
    const cpu = spent(cpu0, cpus());
    log(`${mode.padEnd(7)} node A ${RATE} msg/s  ${describe(result)}`);
    if (cpu.includes(null) || idle.includes(null)) return { error: 'not available: no /proc CPU times' };

    const messages = result.sent;
    const perMessageUs = cpu.map((s) => Math.round((s * 1e6) / messages));
    const idlePerMessageUs = idle.map((s) => Math.round(((s / idleWall) * wall * 1e6) / messages));
    const ratio = (i) => perMessageUs[i] / perMessageUs[0];
    const netRatio = (i) => Math.max(0, perMessageUs[i] - idlePerMessageUs[i]) / Math.max(1, perMessageUs[0] - idlePerMessageUs[0]);
    const summary = {
      mode,
      rate: RATE,
      rooms: ROOMS,
      roomSize: ROOM_SIZE,
      seconds: durationMs / 1000,
      messages,
      lost: result.lost,
      perMessageUs: { a: perMessageUs[0], b: perMessageUs[1], c: perMessageUs[2] },
      idlePerMessageUs: { a: idlePerMessageUs[0], b: idlePerMessageUs[1], c: idlePerMessageUs[2] },
      ratioB: ratio(1),
      ratioC: ratio(2),
      netRatioB: netRatio(1),
      netRatioC: netRatio(2),
      target: 0.05,
    };
    const pct = (x) => `${(x * 100).toFixed(1)} %`;
    log(`== ${mode}: CPU per message: A ${perMessageUs[0]} us, B ${perMessageUs[1]} us (${pct(summary.ratioB)} of A; ${pct(summary.netRatioB)} less idle), C ${perMessageUs[2]} us (${pct(summary.ratioC)}; ${pct(summary.netRatioC)} less idle); target <= 5 %`);
    return summary;
  } finally {
    for (const cl of clients) cl.close();
    for (const n of nodes) await n.proc.stop();
  }
}
