import { createDatabase } from '../lib/postgres.js';
import { startRedis } from '../lib/redis.js';
import { RoomLoad } from '../lib/room-load.js';
import { describe } from '../lib/search.js';
import { jwtMinter, startService } from '../lib/service.js';
import { SioClient, connectAll } from '../lib/sio-client.js';

const NSP = '/agents';
const RECEIVERS = 3;
/** The higher rate (messages per second into one room of RECEIVERS + 1); AMS_BENCH_CLUSTER_RATE=n for another. */
const HIGH_RATE = Number(process.env.AMS_BENCH_CLUSTER_RATE ?? 200);

/** `members` connected clients of one room: the first on `senderNode`, the others on `receiverNode`. */
async function roomOn(admin, senderNode, receiverNode, mint) {
  const agents = await admin.api.createAgents(RECEIVERS + 1);
  const room = await admin.api.createRoom(admin.adminId, agents.map((a) => a.id));
  // The admin (room creator) is a member too but not connected: it is not counted.
  const clients = agents.map((a, i) => new SioClient((i === 0 ? senderNode : receiverNode).url, NSP, { token: mint(a.id) }));
  await connectAll(clients);
  return { clients, roomOf: clients.map(() => room.id), roomSize: new Map([[room.id, RECEIVERS + 1]]), senders: [0] };
}

/**
 * Scenario 6: delivery latency (p50, p99) from a sender on node A to members on node B (PostgreSQL +
 * Redis adapter), against a single node on the same PostgreSQL and against two members on one node
 * of the pair, interleaved, at low load (50 msg/s) and at a higher rate (HIGH_RATE).
 */
export async function clusterScenario(bench) {
  const { quick, log } = bench;
  const database = await createDatabase();
  if (database.error) return { error: `not available: ${database.error}` };
  const redis = await startRedis();
  if (redis.error) {
    await database.drop();
    return { error: `not available: ${redis.error}` };
  }
  const mint = jwtMinter(bench.jwtSecret);
  const nodes = [];
  const clients = [];
  try {
    const common = { databaseUrl: database.url, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir };
    const a = await startService({ name: 'node-a', ...common, redisUrl: redis.url }); // migrates first
    nodes.push(a);
    const b = await startService({ name: 'node-b', ...common, redisUrl: redis.url });
    nodes.push(b);
    const single = await startService({ name: 'single', ...common });
    nodes.push(single);
    const admin = await a.api.createAgent('admin');
    const setup = { api: a.api, adminId: admin.id };

    let sets;
    try {
      sets = {
        single: await roomOn(setup, single, single, mint),
        crossNode: await roomOn(setup, a, b, mint),
        sameNode: await roomOn(setup, a, a, mint),
      };
    } catch (err) {
      return { error: `not available: service WebSocket unavailable: ${err.message}` };
    }
    const loads = {};
    for (const [name, set] of Object.entries(sets)) {
      clients.push(...set.clients);
      loads[name] = new RoomLoad(set);
    }

    // Cross-node delivery is a feature of the build: check it before measuring it.
    const check = await loads.crossNode.step({ rate: 10, durationMs: 300, drainMs: 3000 });
    if (check.lost > 0 || check.ackErrors > 0) {
      return { error: `not available: a message sent on node A did not reach members on node B through Redis (lost ${check.lost}, ack errors ${check.ackErrors}${check.firstError ? `: ${check.firstError}` : ''})` };
    }

    // 50 msg/s: the low-load latency; HIGH_RATE: a higher rate this machine sustains (every message
    // acknowledged and delivered), where queueing in the Redis hop would show.
    const rates = [50, HIGH_RATE];
    const durationMs = quick ? 1000 : 4000;
    const rounds = quick ? 1 : 3;
    // Rounds are pooled by their medians of p50 and the worst p99.
    const pool = (list) => {
      const p50s = list.map((x) => x.delivery.p50).sort((x, y) => x - y);
      return {
        p50: p50s[Math.floor(p50s.length / 2)],
        p99: Math.max(...list.map((x) => x.delivery.p99)),
        lost: list.reduce((s, x) => s + x.lost, 0),
        ackErrors: list.reduce((s, x) => s + x.ackErrors, 0),
      };
    };
    const byRate = [];
    for (const rate of rates) {
      for (const load of Object.values(loads)) await load.step({ rate, durationMs: 500 }); // warm-up
      const runs = { single: [], crossNode: [], sameNode: [] };
      for (let r = 0; r < rounds; r++) {
        for (const name of ['single', 'crossNode', 'sameNode']) {
          const result = await loads[name].step({ rate, durationMs });
          runs[name].push(result);
          log(`${name.padEnd(9)} ${rate} msg/s  ${describe(result)}`);
        }
      }
      const singleNode = pool(runs.single);
      const crossNode = pool(runs.crossNode);
      const entry = {
        rate,
        singleNode,
        crossNode,
        sameNodeOfTwo: pool(runs.sameNode),
        ratio: crossNode.p50 / singleNode.p50,
        ratioP99: crossNode.p99 / singleNode.p99,
        // Sustained: nothing lost and every send acknowledged, on every node layout.
        sustained: Object.values(runs).every((list) => list.every((x) => x.lost === 0 && x.ackErrors === 0)),
        runs,
      };
      log(`== ${rate} msg/s: cross-node delivery p50 ${entry.crossNode.p50?.toFixed(2)} ms (${entry.ratio.toFixed(2)} x single ${singleNode.p50?.toFixed(2)}), p99 ${crossNode.p99?.toFixed(1)} ms (${entry.ratioP99.toFixed(2)} x single ${singleNode.p99?.toFixed(1)})${entry.sustained ? '' : ' NOT SUSTAINED (loss or ack errors)'}`);
      byRate.push(entry);
    }
    const [low, high] = byRate;
    return {
      rate: low.rate,
      roomMembers: RECEIVERS + 1,
      secondsPerRound: durationMs / 1000,
      singleNode: low.singleNode,
      crossNode: low.crossNode,
      sameNodeOfTwo: low.sameNodeOfTwo,
      ratio: low.ratio,
      ratioP99: low.ratioP99,
      high: { rate: high.rate, singleNode: high.singleNode, crossNode: high.crossNode, sameNodeOfTwo: high.sameNodeOfTwo, ratio: high.ratio, ratioP99: high.ratioP99, sustained: high.sustained },
      runs: low.runs,
      highRuns: high.runs,
    };
  } finally {
    for (const c of clients) c.close();
    for (const n of nodes) await n.proc.stop();
    await redis.stop();
    await database.drop().catch((err) => log(`could not drop the bench database: ${err.message}`));
  }
}
