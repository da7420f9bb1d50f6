#!/usr/bin/env node
/**
 * `node bench/cpu-per-exchange.js [--rounds=6] [--seconds=6] [--warm-up=30] [--probe] [--compare-dist=../old/dist,../other/dist]`
 *
 * Scenario 4's storm (`POST /api/v1/sessions`, 16 connections, the server pinned to one core as in
 * `npm run bench`), in alternating rounds against the service (dist/) and other builds of it, with
 * the CPU per exchange of each of the server's threads (/proc/<pid>/task/<tid>/schedstat): the event
 * loop, the libuv pool that hashes (its threads are told apart from the others by their CPU: the four
 * busiest after the loop) and every other thread above 0.05 ms (the SQLite writer and checkpointer,
 * V8's helpers), named by their thread id's offset from the process id (start order). `--probe`
 * adds scenario 4's /healthz probe (every 20 ms). On one pinned core every thread's CPU delays the
 * hash, so this says where an exchange's time goes when the rates of `npm run bench` differ by less
 * than their noise.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { cannon } from './lib/http-load.js';
import { pinSelf } from './lib/processes.js';
import { startProbe } from './lib/probe.js';
import { newJwtSecret, startService } from './lib/service.js';
import { arg } from './lib/args.js';

const rounds = Number(arg('rounds', 6));
const seconds = Number(arg('seconds', 6));
const warmUpSeconds = Number(arg('warm-up', 30)); // as scenario 4: the path runs ~100 times a second
const probe = process.argv.includes('--probe');
const dists = ['dist', ...arg('compare-dist', '').split(',').filter(Boolean)];

/** CPU milliseconds of each thread, by thread id. */
function threadCpuMs(pid) {
  const cpu = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      cpu.set(Number(tid), Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
    } catch {
      // the thread ended in between
    }
  }
  return cpu;
}

pinSelf();
const tmp = mkdtempSync(join(tmpdir(), 'ams-exchange-'));
const jwtSecret = newJwtSecret();
const targets = [];
try {
  for (const [i, dist] of dists.entries()) {
    const service = await startService({ name: `build${i}`, dist, databaseUrl: `sqlite:${join(tmp, `${i}.sqlite`)}`, jwtSecret });
    const agent = await service.api.createAgent('agent');
    const issued = await service.api.issueToken(agent.id);
    const storm = { url: `${service.url}/api/v1/sessions`, method: 'POST', headers: { authorization: `Bearer ${issued.token}` }, connections: 16 };
    await cannon({ ...storm, durationSeconds: warmUpSeconds });
    targets.push({ dist, service, storm, exchanges: 0, seconds: 0, cpu: new Map() });
  }
  for (let r = 0; r < rounds; r++) {
    for (const t of r % 2 === 0 ? targets : [...targets].reverse()) {
      const before = threadCpuMs(t.service.proc.pid);
      const probing = probe ? startProbe(`${t.service.url}/healthz`, 20) : null;
      const run = await cannon({ ...t.storm, durationSeconds: seconds });
      await probing?.stop();
      if (run.non2xx > 0) throw new Error(`${run.non2xx} exchanges failed (${t.dist})`);
      for (const [tid, ms] of threadCpuMs(t.service.proc.pid)) t.cpu.set(tid, (t.cpu.get(tid) ?? 0) + ms - (before.get(tid) ?? 0));
      t.exchanges += run.ok;
      t.seconds += run.durationSeconds;
      console.log(`round ${r + 1} ${t.dist}: ${run.rps} exchanges/s`);
    }
  }
  console.log(`\nCPU ms per exchange, ${rounds} rounds of ${seconds} s${probe ? ', /healthz probed' : ''}:`);
  for (const t of targets) {
    const pid = t.service.proc.pid;
    const per = (ms) => ms / t.exchanges;
    const loop = per(t.cpu.get(pid) ?? 0);
    const others = [...t.cpu].filter(([tid]) => tid !== pid).sort((a, b) => b[1] - a[1]);
    const hash = others.slice(0, 4).reduce((a, [, ms]) => a + per(ms), 0);
    const rest = others.slice(4).filter(([, ms]) => per(ms) >= 0.05).map(([tid, ms]) => `+${tid - pid} ${per(ms).toFixed(2)}`);
    const total = [...t.cpu.values()].reduce((a, ms) => a + per(ms), 0);
    console.log(`${t.dist}: ${(t.exchanges / t.seconds).toFixed(1)} exchanges/s; total ${total.toFixed(2)}: loop ${loop.toFixed(2)}, hash pool ${hash.toFixed(2)}, not hashing ${(total - hash).toFixed(2)}; threads ${rest.join(', ')}`);
  }
} finally {
  for (const t of targets) await t.service.proc.stop();
  rmSync(tmp, { recursive: true, force: true });
}
