#!/usr/bin/env node
/**
 * `node bench/profile.js [--room-size=10] [--rooms=10] [--rate=800] [--seconds=10] [--baseline=r1|r2|r3] [--postgres] [--nodes=2] [--node-args="--perf-basic-prof"]`
 *
 * Where the service's time goes under `message:send` load: starts the built service with the
 * inspector, profiles it (DevTools protocol, like `--cpu-prof` but only during the measured step)
 * at a fixed open-loop rate, writes bench/results/profiles/*.cpuprofile and prints its summary
 * (bench/profile-summary.js). The .cpuprofile file opens in Chrome DevTools or speedscope as a
 * flame graph.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { profileDuring } from './lib/inspector.js';
import { pinSelf, summedCpu } from './lib/processes.js';
import { RoomLoad } from './lib/room-load.js';
import { describe } from './lib/search.js';
import { jwtMinter, newJwtSecret, startBaseline, startService } from './lib/service.js';
import { baselineClients, serviceClients } from './scenarios/rooms.js';
import { arg } from './lib/args.js';
import { createDatabase } from './lib/postgres.js';
import { startRedis } from './lib/redis.js';

const roomSize = Number(arg('room-size', 10));
const rooms = Number(arg('rooms', 10));
const rate = Number(arg('rate', 800));
const seconds = Number(arg('seconds', 10));

pinSelf();
const tmp = mkdtempSync(join(tmpdir(), 'ams-profile-'));
const profileDir = join('bench', 'results', 'profiles');
mkdirSync(profileDir, { recursive: true });
const jwtSecret = newJwtSecret();
// --node-args: more flags for the profiled process, e.g. --perf-basic-prof for `perf record -p` on it
// (its JavaScript named in perf's report), or V8's --trace-opt.
const profiledNodeArgs = ['--inspect=127.0.0.1:0', ...String(arg('node-args', '')).split(' ').filter(Boolean)];
// --baseline=r1|r2|r3: the same step against a baseline instead, for comparison (r3: persisted-relay.js).
const baseline = process.argv.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length);
// --nodes=2: two nodes on a fresh PostgreSQL database and a private Redis, a room's members
// alternating between them; node A is profiled, the CPU is both nodes'. --postgres: one node on PostgreSQL.
const nodes = Number(arg('nodes', 1));
const onPostgres = nodes > 1 || process.argv.includes('--postgres');
const database = onPostgres ? await createDatabase() : null;
if (database?.error) throw new Error(database.error);
const redis = nodes > 1 ? await startRedis() : null;
if (redis?.error) throw new Error(redis.error);
const databaseUrl = database ? database.url : `sqlite:${join(tmp, 'p.sqlite')}`;
const service = baseline
  ? await startBaseline({ name: baseline, script: baseline === 'r3' ? 'bench/baselines/persisted-relay.js' : 'bench/baselines/relay.js', env: { BASELINE_MODE: baseline, BASELINE_DB: join(tmp, `${baseline}.sqlite`) }, nodeArgs: profiledNodeArgs })
  : await startService({ name: `profile-rooms${roomSize}`, databaseUrl, redisUrl: redis?.url, jwtSecret, nodeArgs: profiledNodeArgs });
const others = [];
for (let n = 1; n < nodes; n++) others.push(await startService({ name: `profile-node-${n}`, databaseUrl, redisUrl: redis.url, jwtSecret }));
const set = baseline
  ? await baselineClients(service.url, { rooms, roomSize, mint: jwtMinter(jwtSecret) })
  : await serviceClients(service, { rooms, roomSize, mint: jwtMinter(jwtSecret) }, [service.url, ...others.map((o) => o.url)]);
const load = new RoomLoad({ ...set, serverCpu: summedCpu([service, ...others].map((s) => s.proc)) });
await load.step({ rate: rate / 2, durationMs: 2000 }); // warm-up
const threads = () => {
  const out = {};
  for (const tid of readdirSync(`/proc/${service.proc.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${service.proc.pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const status = readFileSync(`/proc/${service.proc.pid}/task/${tid}/status`, 'utf8');
      const switches = (kind) => Number(new RegExp(`^${kind}_ctxt_switches:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
      out[`${name}#${tid}`] = { cpu: Number(f[11]) + Number(f[12]), switches: switches('voluntary') + switches('nonvoluntary') };
    } catch {
      // thread gone
    }
  }
  return out;
};
// /proc/<pid>/io: the process's read and write system calls (sockets, the database, every thread).
const syscalls = (io) => Object.fromEntries(io.trim().split('\n').map((line) => line.split(': ')).map(([k, v]) => [k, Number(v)]));
const th0 = threads();
const io0 = syscalls(readFileSync(`/proc/${service.proc.pid}/io`, 'utf8'));
const t0 = service.proc.cpuTimes();
const { result, profile } = await profileDuring(service.proc, () => load.step({ rate, durationMs: seconds * 1000 }));
const t1 = service.proc.cpuTimes();
const th1 = threads();
const io1 = syscalls(readFileSync(`/proc/${service.proc.pid}/io`, 'utf8'));
// Per thread: CPU ticks, and context switches (each a wake-up or a preemption) per message sent.
console.log('CPU ticks, context switches per message, by thread:', Object.entries(th1)
  .map(([k, v]) => [k, v.cpu - (th0[k]?.cpu ?? 0), v.switches - (th0[k]?.switches ?? 0)])
  .filter(([, cpu]) => cpu > 0)
  .map(([k, cpu, switches]) => `${k} ${cpu} (${(switches / result.sent).toFixed(2)})`).join(', '));
console.log(`read and write system calls per message: ${(['syscr', 'syscw'].map((k) => ((io1[k] - io0[k]) / result.sent).toFixed(2))).join(', ')}`);
console.log(`${rate} msg/s in rooms of ${roomSize}: ${describe(result)}`);
const perMessage = (t) => (((t1[t] - t0[t]) * 1e6) / result.sent).toFixed(0);
console.log(`server CPU per message${nodes > 1 ? ' (node A)' : ''}: ${perMessage('user')} us user + ${perMessage('system')} us system`);
if (nodes > 1) console.log(`all ${nodes} nodes: ${describe(result)} (server cpu: the nodes' sum)`);
for (const c of set.clients) c.close();
await service.proc.stop();
for (const o of others) await o.proc.stop();
await redis?.stop();
await database?.drop();
rmSync(tmp, { recursive: true, force: true });
const file = join(profileDir, `${baseline ?? 'service'}-rooms${roomSize}-${rate}-${Date.now()}.cpuprofile`);
writeFileSync(file, JSON.stringify(profile));
console.log(execFileSync(process.execPath, ['bench/profile-summary.js', file, '60', `--per=${result.sent}`], { encoding: 'utf8' }));
process.exit(0);
