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
