// The position check's cost per run at N connections on one node (docs/catch-up.md "Position
// checks"): the real rooms service on a real database (SQLite by default, --postgres), N sockets of
// N agents each in --rooms-per-agent rooms, every socket already subscribed (the common case: no
// repair). Sockets are stand-ins whose emit encodes the packet as Socket.IO's parser does and counts
// its bytes: the WebSocket write itself is not in the figure (see docs/benchmarks.md for the cost of
// one frame). Usage: npm run build && node bench/position-check-cost.js [--sockets 19000] [--rooms-per-agent 3] [--postgres]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { startApp } from '../dist/app.js';
import { buildConfig } from '../dist/config/config.js';
import { startPositionChecks } from '../dist/realtime/presence/position-check.js';
import { createPostgresDatabase, createSqliteDatabase } from '../test/helpers/databases.js';

const { values } = parseArgs({ options: { sockets: { type: 'string', default: '19000' }, 'rooms-per-agent': { type: 'string', default: '3' }, 'room-size': { type: 'string', default: '30' }, postgres: { type: 'boolean', default: false }, runs: { type: 'string', default: '5' } } });
const N = Number(values.sockets);
const PER_AGENT = Number(values['rooms-per-agent']);
const ROOM_SIZE = Number(values['room-size']);
const db = values.postgres ? await createPostgresDatabase(process.env.AMS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test', 'ams_bench') : createSqliteDatabase('ams-bench');
const config = buildConfig({ DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123', POSITION_CHECK_INTERVAL_MS: '0' });
const app = await startApp(config, pino({ level: 'silent' }));
try {
  const store = app.ctx.database.db;
  const now = new Date().toISOString();
  const agents = Array.from({ length: N }, () => randomUUID());
  const roomCount = Math.ceil((N * PER_AGENT) / ROOM_SIZE);
  const rooms = Array.from({ length: roomCount }, () => randomUUID());
  const chunk = async (rows, insert) => {
    for (let i = 0; i < rows.length; i += 500) await insert(rows.slice(i, i + 500));
  };
  await chunk(agents, (ids) => store.insertInto('agents').values(ids.map((id) => ({ id, name: `bench-${id}`, display_name: 'Bench', role: 'agent', created_at: now }))).execute());
  await chunk(rooms.map((id, i) => ({ id, slug: `bench-${i}-${id.slice(0, 8)}`, name: `Bench ${i}`, created_at: now, created_by: agents[0], last_seq: 1000 + i })), (rows) => store.insertInto('rooms').values(rows).execute());
  const memberships = [];
  const roomsOf = agents.map((agentId, a) => Array.from({ length: PER_AGENT }, (_, k) => rooms[(a * PER_AGENT + k) % roomCount]));
  agents.forEach((agentId, a) => {
    for (const roomId of new Set(roomsOf[a])) memberships.push({ room_id: roomId, agent_id: agentId, joined_at: now });
  });
  await chunk(memberships, (rows) => store.insertInto('room_members').values(rows).execute());

  let bytes = 0;
  let packets = 0;
  const sockets = new Map(agents.map((agentId, a) => {
    const id = `s${a}`;
    return [id, {
      id, connected: true,
      data: { principal: { agentId, role: 'agent' }, subscribed: true },
      rooms: new Set([id, `agent:${agentId}`, ...roomsOf[a].map((r) => `room:${r}`)]),
      emit(event, payload) {
        // What socket.io-parser's Encoder produces for an event packet on a namespace.
        bytes += `2/agents,${JSON.stringify([event, payload])}`.length;
        packets++;
      },
    }];
  }));
  const nsp = { sockets };
  const subscriptions = { join: async () => undefined, leave: async () => undefined };
  const check = startPositionChecks({ nsp, rooms: app.ctx.rooms, subscriptions, logger: pino({ level: 'silent' }), intervalMs: 0 });
  await check.checkNow('warm-up');
  const results = [];
  for (let r = 0; r < Number(values.runs); r++) {
    bytes = 0;
    packets = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const outcome = await check.checkNow('bench');
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    results.push({ wall, cpuMs: (cpu.user + cpu.system) / 1000, bytes, packets, outcome });
  }
  check.stop();

  // What the other choice, disconnecting the sockets, costs the node per socket at the least: the
  // service calls of a reconnection's setup (connection.ts: memberships twice, lastSeqs, presence),
  // without the WebSocket handshake, the JWT check or the client's room:sync that follow.
  const sample = agents.slice(0, Math.min(2000, N));
  const setupCpu0 = process.cpuUsage();
  for (const [a, agentId] of sample.entries()) {
    const principal = { agentId, role: 'agent' };
    const ids = (await app.ctx.rooms.listForSocket(principal)).map((r) => r.id);
    await app.ctx.presence.connect(agentId, `bench-${a}`, ids);
    await app.ctx.rooms.lastSeqs(ids);
    await app.ctx.rooms.listForSocket(principal);
    await app.ctx.presence.disconnect(agentId, `bench-${a}`);
  }
  const setupCpu = process.cpuUsage(setupCpu0);
  const setupUsPerSocket = (setupCpu.user + setupCpu.system) / sample.length;
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const cpuMs = median(results.map((r) => r.cpuMs));
  const wallMs = median(results.map((r) => r.wall));
  const { bytes: b, packets: p, outcome } = results[0];
  console.log(JSON.stringify({
    dialect: values.postgres ? 'postgres' : 'sqlite', sockets: N, roomsPerAgent: PER_AGENT, rooms: roomCount, repaired: outcome.joined + outcome.left,
    runMs: { cpu: +cpuMs.toFixed(1), wall: +wallMs.toFixed(1) }, cpuUsPerSocket: +((cpuMs * 1000) / N).toFixed(2),
    packets: p, bytesPerSocket: +(b / p).toFixed(1), reconnectSetupCpuUsPerSocket: +setupUsPerSocket.toFixed(1),
    cpuShareAt30s: `${((cpuMs / 30_000) * 100).toFixed(3)} %`,
    projected50k: { cpuMsPerRun: +((cpuMs / N) * 50_000).toFixed(0), cpuShareAt30s: `${(((cpuMs / N) * 50_000) / 30_000 * 100).toFixed(3)} %`, bytesPerRun: Math.round((b / p) * 50_000) },
  }));
} finally {
  await app.close();
  await db.drop?.();
}
