#!/usr/bin/env node
/**
 * `node bench/timeline.js [--rate=6500] [--seconds=20] [--bucket-ms=100] [--rooms=10] [--room-size=10] [--data=1024] [--target=service|r3|r1] [--env=K=V,K=V] [--node-args=--perf-basic-prof] [--dist=../old/dist] [--webhooks=10]`
 *
 * Scenario 1's load (10 rooms of 10, every member sending in turn; scenario 2's with --rooms=2 --room-size=100) at one steady rate for a long
 * time, reporting the ack latency bucket by bucket (by scheduled send time): where a rate search
 * sees only a p99 per step, this shows when the slow acks happen (periodic stalls, warm-up, a
 * backlog), so that their cause can be looked for at those moments. The server's pid is printed for
 * `perf`/`strace` meanwhile.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinSelf } from './lib/processes.js';
import { jwtMinter, newJwtSecret, startBaseline, startService } from './lib/service.js';
import { baselineClients, dataOfBytes, serviceClients } from './scenarios/rooms.js';
import { arg } from './lib/args.js';

const rate = Number(arg('rate', 6500));
const seconds = Number(arg('seconds', 20));
const bucketMs = Number(arg('bucket-ms', 100));
const target = arg('target', 'service');
const dist = arg('dist', 'dist');
const rooms = Number(arg('rooms', 10));
const roomSize = Number(arg('room-size', 10));
const nodeArgs = (arg('node-args', '') || '').split(',').filter(Boolean);
// --data=N: every send carries `data` of N bytes (scenario 18's shape).
const dataBytes = Number(arg('data', 0));
const data = dataBytes > 0 ? dataOfBytes(dataBytes) : null;
const extraEnv = Object.fromEntries((arg('env', '') || '').split(',').filter(Boolean).map((kv) => kv.split('=')));

pinSelf();
const tmp = mkdtempSync(join(tmpdir(), 'ams-timeline-'));
const jwtSecret = newJwtSecret();
const mint = jwtMinter(jwtSecret);
let proc;
let set;
try {
  if (target === 'service') {
    const service = await startService({ name: 'service', databaseUrl: `sqlite:${join(tmp, 's.sqlite')}`, jwtSecret, env: extraEnv, nodeArgs, dist });
    proc = service.proc;
    set = await serviceClients(service, { rooms, roomSize, mint });
    // --webhooks=N: N `offline` endpoints, one per room, for a member (scenario 14's shape).
    const hooks = Number(arg('webhooks', 0));
    const owners = [...new Set(set.roomOf)].map((roomId) => set.agentOf.find((a, i) => set.roomOf[i] === roomId && a.role !== 'admin'));
    for (let i = 0; i < hooks; i++) {
      const owner = owners[i % owners.length];
      await service.api.expect(201, 'POST', `/api/v1/agents/${owner.id}/webhooks`, { body: { url: 'http://127.0.0.1:9/hook', mode: 'offline' }, headers: { authorization: `Bearer ${mint(owner.id, owner.role)}` } });
    }
  } else {
    const script = target === 'r3' ? 'bench/baselines/persisted-relay.js' : 'bench/baselines/relay.js';
    const r = await startBaseline({ name: target, script, nodeArgs, env: { BASELINE_MODE: 'r1', BASELINE_DB: join(tmp, 'r.sqlite') } });
    proc = r.proc;
    set = await baselineClients(r.url, { rooms, roomSize, mint });
  }
  console.log(`server pid ${proc.pid}`);
  const { clients, roomOf } = set;
  const n = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const buckets = Math.ceil((seconds * 1000) / bucketMs);
  const worst = new Float64Array(buckets);
  const count = new Uint32Array(buckets);
  const over50 = new Uint32Array(buckets);
  let acked = 0;
  const t0 = performance.now() + 5;
  await new Promise((resolve) => {
    let i = 0;
    const tick = () => {
      const now = performance.now();
      while (i < n && t0 + i * interval <= now) {
        const sched = t0 + i * interval;
        const c = i % clients.length;
        const b = Math.floor((sched - t0) / bucketMs);
        clients[c].emitWithAck('message:send', { roomId: roomOf[c], body: `~q${i}~ timeline`, ...(data === null ? {} : { data }) }, () => {
          const ms = performance.now() - sched;
          if (ms > worst[b]) worst[b] = ms;
          if (ms > 50) over50[b]++;
          count[b]++;
          if (++acked === n) resolve();
        });
        i++;
      }
      if (i < n) setTimeout(tick, 1);
    };
    tick();
    setTimeout(resolve, seconds * 1000 + 10_000);
  });
  const cpu = proc.cpu?.();
  console.log(`acked ${acked}/${n}; server cpu ${cpu}`);
  const line = [];
  for (let b = 0; b < buckets; b++) {
    line.push(`${((b * bucketMs) / 1000).toFixed(1)}s max ${worst[b].toFixed(0)} ms${over50[b] ? ` (${over50[b]} > 50)` : ''}`);
  }
  // Only the interesting buckets, and a summary.
  const slow = line.filter((_, b) => worst[b] > 20);
  console.log(slow.join('\n'));
  let allOver = 0;
  for (const v of over50) allOver += v;
  console.log(`buckets with max > 20 ms: ${slow.length}/${buckets}; acks over 50 ms: ${allOver} (${((allOver / n) * 100).toFixed(2)} %)`);
} finally {
  for (const c of set?.clients ?? []) c.close?.();
  await proc?.stop();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
