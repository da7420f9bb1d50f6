import os from 'node:os';
import { join } from 'node:path';
import { pinning, startNode } from '../lib/processes.js';
import { cannon } from '../lib/http-load.js';
import { startProbe } from '../lib/probe.js';
import { startService } from '../lib/service.js';

const CONNECTIONS = 16;
const WARM_UP_SECONDS = 30;

/**
 * Raw Argon2id verifies/s in a process pinned like the service, with `concurrency` verifies in
 * flight (one per core is the fastest: Argon2id is memory-hard, more at once only share caches).
 */
async function rawArgon2(durationMs, concurrency) {
  const proc = startNode({ name: 'argon2-raw', script: 'bench/baselines/argon2-raw.js', env: { CONCURRENCY: String(concurrency), DURATION_MS: String(durationMs) } });
  const code = await proc.wait();
  const last = proc.tail().split('\n').pop();
  if (code !== 0) throw new Error(`argon2-raw failed:\n${proc.tail()}`);
  return JSON.parse(last);
}

/**
 * Scenario 4: a storm of `POST /api/v1/sessions` (API token -> JWT, one Argon2id verify each)
 * against raw Argon2id verifies/s, with `/healthz` probed open-loop during the storm: the event
 * loop must stay responsive while the pool hashes.
 */
export async function sessionsScenario(bench) {
  const { quick, tmp, log } = bench;
  const seconds = quick ? 2 : 6;
  const rounds = quick ? 1 : 2;
  const service = await startService({ name: 'service-sessions', databaseUrl: `sqlite:${join(tmp, 'sessions.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
  try {
    const agent = await service.api.createAgent('agent');
    const issued = await service.api.issueToken(agent.id);
    const storm = { url: `${service.url}/api/v1/sessions`, method: 'POST', headers: { authorization: `Bearer ${issued.token}` }, connections: CONNECTIONS };
    // Warm-up to steady state. The exchange path runs only ~100 times a second (each waits for its
    // hash), so V8 takes ~3,000 exchanges to optimise it: the event loop's CPU per exchange falls by
    // about a third over the first 30 s of a storm, then stays flat (README, "What limits each scenario").
    await cannon({ ...storm, durationSeconds: quick ? 1 : WARM_UP_SECONDS });

    const argonRuns = [];
    const serviceRuns = [];
    const healthRuns = [];
    const serverCpus = pinning.enabled ? 1 : os.availableParallelism();
    // The baseline is the best raw rate: one verify per core, or the libuv pool full (4).
    const concurrencies = quick ? [serverCpus] : [...new Set([serverCpus, 4])];
    for (let r = 0; r < rounds; r++) {
      for (const concurrency of concurrencies) {
        const raw = await rawArgon2(seconds * 1000, concurrency);
        argonRuns.push({ ...raw, concurrency });
        log(`argon2   ${raw.perSecond.toFixed(1)} verifies/s (${concurrency} in flight)`);
      }

      const probe = startProbe(`${service.url}/healthz`, 20);
      const cpu0 = service.proc.cpu();
      const run = await cannon({ ...storm, durationSeconds: seconds });
      const cpu1 = service.proc.cpu();
      const health = await probe.stop();
      serviceRuns.push({ ...run, serverCpu: cpu0 !== null ? Math.round(((cpu1 - cpu0) / run.durationSeconds) * 100) / 100 : null });
      healthRuns.push(health);
      log(`service  ${run.rps} exchanges/s  p99 ${run.p99} ms  non-2xx ${run.non2xx}  /healthz p50 ${health.p50} p99 ${health.p99} max ${health.max} ms (${health.failures + health.unanswered} failed)`);
      if (run.non2xx > 0) throw new Error(`${run.non2xx} session exchanges failed`);
    }
    const perSecond = serviceRuns.reduce((a, r) => a + r.ok, 0) / serviceRuns.reduce((a, r) => a + r.durationSeconds, 0);
    const rateAt = (c) => {
      const runs = argonRuns.filter((r) => r.concurrency === c);
      return runs.reduce((a, r) => a + r.verifies, 0) / runs.reduce((a, r) => a + r.seconds, 0);
    };
    const argonPerSecond = Math.max(...concurrencies.map(rateAt));
    // The worst round's p99: the event loop must stay responsive in every storm.
    const worst = healthRuns.reduce((a, h) => ((h.p99 ?? Infinity) > (a.p99 ?? -1) ? h : a));
    return {
      connections: CONNECTIONS,
      secondsPerRound: seconds,
      service: { perSecond, rounds: serviceRuns },
      argon2: { perSecond: argonPerSecond, rounds: argonRuns },
      ratio: perSecond / argonPerSecond,
      healthz: { ...worst, intervalMs: 20, rounds: healthRuns },
    };
  } finally {
    await service.proc.stop();
  }
}
