import { createDatabase } from '../lib/postgres.js';
import { cpuGrowth, cpuSeconds, postgresCpuByPid } from '../lib/processes.js';
import { startRedis } from '../lib/redis.js';
import { RoomLoad, sendersOf } from '../lib/room-load.js';
import { describe } from '../lib/search.js';
import { jwtMinter, startService } from '../lib/service.js';
import { serviceClients } from './rooms.js';

const ROOMS = 20;
const ROOM_SIZE = 10;
/** Messages per second into the rooms; AMS_BENCH_SPREAD_RATE=n for another. */
const RATE = Number(process.env.AMS_BENCH_SPREAD_RATE ?? 1000);

/**
 * Scenario 27, "two nodes cost little more than one" (docs/scale-out.md, the capacity model): rooms
 * of 10 whose members are spread over two nodes (every other member on each), two senders per room,
 * one on each node, against the same rooms on one node, on the same PostgreSQL in the same run. The
 * CPU of every process that serves the messages (/proc): the nodes, Redis, and PostgreSQL's
 * processes of the bench database (its backends and the shared WAL writer, checkpointer...), per
 * message; and delivery p50. Targets: total CPU per message <= 1.5 x one node's, delivery p50 <= 1.5 x.
 * The layouts are measured in turns (two rounds each, one with --quick), each on a quiet machine
 * but for the other layout's idle processes.
 */
export async function spreadScenario(bench) {
  const { quick, log } = bench;
  const database = await createDatabase();
  if (database.error) return { error: `not available: ${database.error}` };
  const redis = await startRedis();
  if (redis.error) {
    await database.drop();
    return { error: `not available: ${redis.error}` };
  }
  const databaseName = new URL(database.url).pathname.slice(1);
  const mint = jwtMinter(bench.jwtSecret);
  const nodes = [];
  const clients = [];
  try {
    const common = { databaseUrl: database.url, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir };
    const single = await startService({ name: 'single', ...common }); // migrates first
    nodes.push(single);
    const a = await startService({ name: 'node-a', ...common, redisUrl: redis.url });
    nodes.push(a);
    const b = await startService({ name: 'node-b', ...common, redisUrl: redis.url });
    nodes.push(b);

    const layouts = {};
    for (const [name, urls, pids] of [['one', [single.url], [single.proc.pid]], ['two', [a.url, b.url], [a.proc.pid, b.proc.pid, redis.pid]]]) {
      const set = await serviceClients(name === 'one' ? single : a, { rooms: ROOMS, roomSize: ROOM_SIZE, mint }, urls);
      clients.push(...set.clients);
      // Two senders a room: its first two members, on different nodes in the spread layout.
      layouts[name] = { load: new RoomLoad({ ...set, senders: sendersOf(set.roomOf, 2) }), pids };
    }
    if (layouts.two.pids.includes(null) || layouts.two.pids.includes(undefined)) return { error: 'not available: the private Redis has no process here (AMS_BENCH_REDIS_URL)' };

    const durationMs = quick ? 2000 : 6000;
    const rounds = quick ? 1 : 2;
    const runs = { one: [], two: [] };
    for (const layout of Object.values(layouts)) await layout.load.step({ rate: RATE, durationMs: 500 }); // warm-up
    for (let round = 0; round < rounds; round++) {
      for (const [name, layout] of Object.entries(layouts)) {
        const nodes0 = layout.pids.map(cpuSeconds);
        const pg0 = postgresCpuByPid(databaseName);
        const result = await layout.load.step({ rate: RATE, durationMs });
        const pg = pg0 === null ? null : cpuGrowth(pg0, postgresCpuByPid(databaseName) ?? new Map());
        const own = layout.pids.map((pid, i) => (nodes0[i] === null ? null : cpuSeconds(pid) - nodes0[i]));
        if (pg === null || own.includes(null) || Number.isNaN(own.reduce((s, x) => s + x, 0))) return { error: 'not available: no /proc CPU times' };
        const messages = result.sent;
        const us = (seconds) => Math.round((seconds * 1e6) / messages);
        const entry = {
          messages,
          lost: result.lost,
          ackErrors: result.ackErrors,
          deliveryP50: result.delivery.p50,
          deliveryP99: result.delivery.p99,
          // Per message, microseconds: the nodes (and Redis for two), PostgreSQL, all together.
          nodesUs: own.map(us),
          postgresUs: us(pg),
          totalUs: us(own.reduce((s, x) => s + x, 0) + pg),
        };
        runs[name].push(entry);
        log(`${name === 'one' ? 'one node ' : 'two nodes'} ${RATE} msg/s  ${describe(result)}  CPU/msg ${entry.totalUs} us (processes ${entry.nodesUs.join(' + ')}, PostgreSQL ${entry.postgresUs})`);
      }
    }
    const median = (list, key) => {
      const values = list.map((x) => x[key]).sort((x, y) => x - y);
      return values[Math.floor((values.length - 1) / 2)];
    };
    const summary = {
      rate: RATE,
      rooms: ROOMS,
      roomSize: ROOM_SIZE,
      seconds: durationMs / 1000,
      rounds,
      one: { totalUs: median(runs.one, 'totalUs'), deliveryP50: median(runs.one, 'deliveryP50') },
      two: { totalUs: median(runs.two, 'totalUs'), deliveryP50: median(runs.two, 'deliveryP50') },
      sustained: [...runs.one, ...runs.two].every((r) => r.lost === 0 && r.ackErrors === 0),
      runs,
      target: 1.5,
    };
    summary.cpuRatio = summary.two.totalUs / summary.one.totalUs;
    summary.deliveryRatio = summary.two.deliveryP50 / summary.one.deliveryP50;
    log(`== total CPU per message: two nodes ${summary.two.totalUs} us, one node ${summary.one.totalUs} us (${summary.cpuRatio.toFixed(2)} x); delivery p50 ${summary.two.deliveryP50?.toFixed(2)} ms vs ${summary.one.deliveryP50?.toFixed(2)} ms (${summary.deliveryRatio.toFixed(2)} x); targets <= 1.5 x${summary.sustained ? '' : '; NOT SUSTAINED (loss or ack errors)'}`);
    return summary;
  } finally {
    for (const cl of clients) cl.close();
    for (const n of nodes) await n.proc.stop();
    await redis.stop();
    await database.drop().catch((err) => log(`could not drop the bench database: ${err.message}`));
  }
}
