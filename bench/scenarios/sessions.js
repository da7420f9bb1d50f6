import os from 'node:os';
import { join } from 'node:path';
import { pinning, startNode } from '../lib/processes.js';
import { cannon } from '../lib/http-load.js';
import { newHistogram, summarize } from '../lib/histogram.js';
import { startProbe } from '../lib/probe.js';
import { startBaseline, startService } from '../lib/service.js';

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
 * loop must stay responsive while the pool hashes. A bare Fastify route with the same gate
 * (bench/baselines/argon2-route.js) is stormed alike, probe included: its rate over raw's is the
 * ceiling of the stack on this machine, what the service's ratio is to be read against.
 */
export async function sessionsScenario(bench) {
  const { quick, tmp, log } = bench;
  const seconds = quick ? 2 : 6;
  const rounds = quick ? 1 : 4;
  const service = await startService({ name: 'service-sessions', databaseUrl: `sqlite:${join(tmp, 'sessions.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
  let bare;
  let other; // --compare-dist: another build of the service, stormed in the same rounds
  try {
    bare = await startBaseline({ name: 'argon2-route', script: 'bench/baselines/argon2-route.js', profileDir: bench.profileDir });
    const stormOf = async (svc) => {
      const agent = await svc.api.createAgent('agent');
      const issued = await svc.api.issueToken(agent.id);
      return { url: `${svc.url}/api/v1/sessions`, method: 'POST', headers: { authorization: `Bearer ${issued.token}` }, connections: CONNECTIONS };
    };
    const storm = await stormOf(service);
    // Warm-up to steady state. The exchange path runs only ~100 times a second (each waits for its
    // hash), so V8 takes ~3,000 exchanges to optimise it: the event loop's CPU per exchange falls by
    // about a third over the first 30 s of a storm, then stays flat (docs/benchmarks.md, "What limits each scenario").
    await cannon({ ...storm, durationSeconds: quick ? 1 : WARM_UP_SECONDS });
    let otherStorm;
    if (bench.compareDist) {
      other = await startService({ name: 'compare-sessions', dist: bench.compareDist, databaseUrl: `sqlite:${join(tmp, 'sessions-compare.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
      otherStorm = await stormOf(other);
      await cannon({ ...otherStorm, durationSeconds: quick ? 1 : WARM_UP_SECONDS });
    }
    const bareStorm = { url: `${bare.url}/api/v1/sessions`, method: 'POST', connections: CONNECTIONS };
    await cannon({ ...bareStorm, durationSeconds: quick ? 1 : WARM_UP_SECONDS / 3 }); // far less code to optimise

    const argonRuns = [];
    const serviceRuns = [];
    const bareRuns = [];
    const otherRuns = [];
    const healthRuns = [];
    const health = newHistogram(); // every probe of every round
    const bareHealth = newHistogram();
    const serverCpus = pinning.enabled ? 1 : os.availableParallelism();
    // The baseline is the best raw rate. Pinned to one core, that is one verify at a time: four in
    // flight measured 0.65 to 0.8 x one, and a round of them slowed the round run after it (the
    // service: 0.80 x raw after it, 0.87 without, on the AMD host), so it is not run there.
    // Unpinned: one verify per core, or the libuv pool full (4).
    const concurrencies = quick || pinning.enabled ? [serverCpus] : [...new Set([serverCpus, 4])];
    const measureRaw = async () => {
      for (const concurrency of concurrencies) {
        const raw = await rawArgon2(seconds * 1000, concurrency);
        argonRuns.push({ ...raw, concurrency });
        log(`argon2   ${raw.perSecond.toFixed(1)} verifies/s (${concurrency} in flight)`);
      }
    };
    // The same storm and the same probe, so the route pays for what the service pays for.
    const measureBare = async () => {
      const probe = startProbe(`${bare.url}/healthz`, 20, bareHealth);
      const run = await cannon({ ...bareStorm, durationSeconds: seconds });
      await probe.stop();
      bareRuns.push(run);
      log(`bare     ${run.rps} exchanges/s  p99 ${run.p99} ms  non-2xx ${run.non2xx}  (Fastify route, same gate)`);
      if (run.non2xx > 0) throw new Error(`${run.non2xx} bare-route exchanges failed`);
    };
    const measureService = async () => {
      const probe = startProbe(`${service.url}/healthz`, 20, health);
      const cpu0 = service.proc.cpu();
      const run = await cannon({ ...storm, durationSeconds: seconds });
      const cpu1 = service.proc.cpu();
      const probed = await probe.stop();
      serviceRuns.push({ ...run, serverCpu: cpu0 !== null ? Math.round(((cpu1 - cpu0) / run.durationSeconds) * 100) / 100 : null });
      healthRuns.push(probed);
      log(`service  ${run.rps} exchanges/s  p99 ${run.p99} ms  non-2xx ${run.non2xx}  /healthz p50 ${probed.p50} p99 ${probed.p99} max ${probed.max} ms (${probed.failures + probed.unanswered} failed)`);
      if (run.non2xx > 0) throw new Error(`${run.non2xx} session exchanges failed`);
    };
    const measureOther = async () => {
      const probe = startProbe(`${other.url}/healthz`, 20, newHistogram()); // what the service pays for
      const run = await cannon({ ...otherStorm, durationSeconds: seconds });
      await probe.stop();
      otherRuns.push(run);
      log(`compare  ${run.rps} exchanges/s  p99 ${run.p99} ms  non-2xx ${run.non2xx}  (${bench.compareDist})`);
    };
    // Short rounds, alternating, in alternating order (raw first, then service first): on a shared
    // VM one 6 s round varies by +-10 %, and drift or whatever a round leaves behind then falls on
    // both sides alike. The rates are totals over all rounds.
    for (let r = 0; r < rounds; r++) {
      const order = [measureRaw, measureService, measureBare, ...(other ? [measureOther] : [])];
      for (const measure of r % 2 === 0 ? order : order.reverse()) await measure();
    }
    const rateOf = (runs) => runs.reduce((a, r) => a + r.ok, 0) / runs.reduce((a, r) => a + r.durationSeconds, 0);
    const perSecond = rateOf(serviceRuns);
    const barePerSecond = rateOf(bareRuns);
    const rateAt = (c) => {
      const runs = argonRuns.filter((r) => r.concurrency === c);
      return runs.reduce((a, r) => a + r.verifies, 0) / runs.reduce((a, r) => a + r.seconds, 0);
    };
    const argonPerSecond = Math.max(...concurrencies.map(rateAt));
    // /healthz over the whole storm: the percentiles of every probe of every round together.
    const total = (key) => healthRuns.reduce((a, h) => a + h[key], 0);
    const healthz = { ...summarize(health), sent: total('sent'), failures: total('failures'), unanswered: total('unanswered') };
    return {
      connections: CONNECTIONS,
      secondsPerRound: seconds,
      service: { perSecond, rounds: serviceRuns },
      argon2: { perSecond: argonPerSecond, rounds: argonRuns },
      ratio: perSecond / argonPerSecond,
      bareRoute: { perSecond: barePerSecond, ratioToArgon2: barePerSecond / argonPerSecond, rounds: bareRuns },
      ratioToBareRoute: perSecond / barePerSecond,
      ...(other ? { compare: { dist: bench.compareDist, perSecond: rateOf(otherRuns), ratio: rateOf(otherRuns) / argonPerSecond, rounds: otherRuns } } : {}),
      healthz: { ...healthz, intervalMs: 20, rounds: healthRuns },
    };
  } finally {
    await bare?.proc.stop();
    await other?.proc.stop();
    await service.proc.stop();
  }
}
