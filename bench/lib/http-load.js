import autocannon from 'autocannon';

/**
 * A closed-loop autocannon run (fixed connections, as many requests as the server answers).
 * @returns {Promise<{rps: number, ok: number, non2xx: number, errors: number, p50: number, p90: number, p99: number, durationSeconds: number}>}
 */
export async function cannon({ url, durationSeconds, connections = 16, method = 'GET', headers = {}, body, bodyOf }) {
  // `bodyOf()`: a new body for every request (work that a repeated body would not repeat, such as an idempotency key).
  const requests = bodyOf === undefined ? undefined : [{ method, headers, setupRequest: (req) => ({ ...req, body: bodyOf() }) }];
  const result = await autocannon({ url, connections, duration: durationSeconds, method, headers, body, pipelining: 1, ...(requests === undefined ? {} : { requests }) });
  const ok = result['2xx'];
  return {
    rps: Math.round((ok / result.duration) * 10) / 10,
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    durationSeconds: result.duration,
  };
}

/** Runs `run(target)` for each target in turn, `rounds` times: noise hits them alike. */
export async function alternate(targets, rounds, run) {
  const runs = Object.fromEntries(targets.map((t) => [t, []]));
  for (let r = 0; r < rounds; r++) for (const t of targets) runs[t].push(await run(t));
  return runs;
}

/** The median run by `key` (rounds are few; the median resists one noisy round). */
export function medianBy(runs, key) {
  const sorted = [...runs].sort((a, b) => a[key] - b[key]);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Several rounds as one: total 2xx over total time; the median round's percentiles. */
export function combine(runs) {
  const ok = runs.reduce((a, r) => a + r.ok, 0);
  const seconds = runs.reduce((a, r) => a + r.durationSeconds, 0);
  const median = (key) => [...runs].map((r) => r[key]).sort((a, b) => a - b)[Math.floor(runs.length / 2)];
  const cpu = runs.map((r) => r.cpuMsPerRequest).filter((v) => v !== null);
  return {
    rps: Math.round((ok / seconds) * 10) / 10,
    cpuMsPerRequest: cpu.length > 0 ? Math.min(...cpu) : null,
    p50: median('p50'),
    p99: median('p99'),
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    rounds: runs,
  };
}

/**
 * Closed-loop runs of every target in alternating rounds (`targets`: name -> cannon options), each
 * with the server CPU per request of the process serving it (`procOf(name)`), logged, combined per
 * name; a non-2xx answer or an error fails the scenario.
 */
export async function cannonRounds(targets, { rounds, seconds, procOf, log }) {
  const width = Math.max(...Object.keys(targets).map((name) => name.length)) + 2;
  const runs = await alternate(Object.keys(targets), rounds, async (name) => {
    const proc = procOf(name);
    const cpu0 = proc.cpu();
    const r = await cannon({ ...targets[name], durationSeconds: seconds });
    r.cpuMsPerRequest = cpu0 === null ? null : Math.round(((proc.cpu() - cpu0) * 1e6) / (r.ok + r.non2xx)) / 1000;
    log(`${name.padEnd(width)} ${r.rps} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  cpu ${r.cpuMsPerRequest} ms/req  non-2xx ${r.non2xx}  errors ${r.errors}`);
    return r;
  });
  const result = Object.fromEntries(Object.entries(runs).map(([name, r]) => [name, combine(r)]));
  for (const [name, r] of Object.entries(result)) if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return result;
}
