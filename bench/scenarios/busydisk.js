import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startProbe } from '../lib/probe.js';
import { RoomLoad } from '../lib/room-load.js';
import { describe } from '../lib/search.js';
import { jwtMinter, startService } from '../lib/service.js';
import { serviceClients } from './rooms.js';

/**
 * The direct-I/O writer: `dd oflag=direct` in 4 MiB blocks over one file of `fileMiB`, rewritten
 * in place (conv=notrunc) again and again until stopped, so the disk stays saturated for as long as
 * the step lasts while the space used stays bounded. Direct I/O bypasses the page cache: the disk
 * queue is full, but no memory pressure is added.
 */
function startDiskWriter(file, fileMiB, maxSeconds) {
  const blocks = Math.max(1, Math.round(fileMiB / 4));
  const script = `end=$((SECONDS+${maxSeconds})); while [ $SECONDS -lt $end ]; do dd if=/dev/zero of='${file}' bs=4M count=${blocks} oflag=direct conv=notrunc status=none || exit 1; done`;
  const child = spawn('sh', ['-c', script], { stdio: 'ignore', detached: true });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    async stop() {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      await exited;
      rmSync(file, { force: true });
    },
  };
}

/** The event-loop delay p99 and max since the previous scrape (prom-client resets its histogram on each). */
async function scrapeEventLoopDelay(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name) => {
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return match ? Math.round(Number(match[1]) * 1e6) / 1000 : null;
  };
  return { p50: value('nodejs_eventloop_lag_p50_seconds'), p99: value('nodejs_eventloop_lag_p99_seconds'), max: value('nodejs_eventloop_lag_max_seconds') };
}

/**
 * Scenario 12, busy disk: one room of 10, nine members sending 1,000 msg/s in all, with and without a
 * direct-I/O writer on the data disk; the event-loop delay p99 (the service's own
 * `nodejs_eventloop_lag_*` metrics, reset by each scrape), `/healthz` p99 (probed every 20 ms) and
 * the ack p99 of both. Quiet and busy steps alternate, twice each (once with `--quick`).
 */
export async function busyDiskScenario(bench) {
  const { quick, tmp, log } = bench;
  const mint = jwtMinter(bench.jwtSecret);
  const rate = 1000;
  const durationMs = quick ? 1500 : 4000;
  const rounds = quick ? 1 : 2;
  const ddFile = join(tmp, 'busydisk-ddfile');
  let service;
  let clients = [];
  try {
    service = await startService({ name: 'service-busydisk', databaseUrl: `sqlite:${join(tmp, 'busydisk.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    const set = await serviceClients(service, { rooms: 1, roomSize: 10, mint });
    clients = set.clients;
    const load = new RoomLoad({ ...set, senders: [1, 2, 3, 4, 5, 6, 7, 8, 9], serverCpu: () => service.proc.cpu() });
    // Warm-up: JIT, statement caches.
    await load.step({ rate: rate / 2, durationMs: quick ? 500 : 2000 });

    const runs = { quiet: [], busy: [] };
    for (let round = 0; round < rounds; round++) {
      for (const kind of ['quiet', 'busy']) {
        const writer = kind === 'busy' ? startDiskWriter(ddFile, 1024, Math.ceil(durationMs / 1000) + 6) : null;
        try {
          if (writer) await sleep(500); // the disk queue fills
          await scrapeEventLoopDelay(service.url);
          const probe = startProbe(`${service.url}/healthz`, 20);
          const step = await load.step({ rate, durationMs });
          const loop = await scrapeEventLoopDelay(service.url);
          const healthz = await probe.stop();
          runs[kind].push({ step, loop, healthz });
          log(`${kind.padEnd(5)} ${rate} msg/s: event-loop delay p99 ${loop.p99} ms (max ${loop.max}), /healthz p99 ${healthz.p99} ms, ${describe(step)}`);
        } finally {
          await writer?.stop();
        }
      }
    }
    // The worst round of each kind: a stall must not hide behind a good round.
    const worst = (list) => list.reduce((a, b) => (b.loop.p99 > a.loop.p99 ? b : a));
    const summary = (list) => {
      const r = worst(list);
      return { eventLoopDelay: r.loop, healthz: r.healthz, ack: r.step.ack, delivery: r.step.delivery, lost: r.step.lost, serverCpuPerMessageUs: r.step.serverCpuPerMessageUs };
    };
    return { rate, durationMs, rounds, quiet: summary(runs.quiet), busy: summary(runs.busy), runs };
  } finally {
    for (const c of clients) c.close();
    await service?.proc.stop();
    rmSync(ddFile, { force: true });
  }
}
