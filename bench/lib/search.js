/**
 * Finds, for several targets at once, the highest rate that passes. The targets' steps are
 * interleaved (one step each, in turn) so that background noise on the machine hits them alike.
 * Rates grow geometrically until a step fails, then the gap between the highest pass and the
 * lowest fail is bisected (geometric midpoint) down to the requested precision. In the full run a
 * failure is confirmed once before it counts, so one noisy step does not end a search.
 *
 * @param {Array<{name: string, run: (rate: number) => Promise<{pass: boolean}>}>} targets
 * @param {{start: number, growth: number, precision: number, confirmFail: boolean, maxSteps: number, minRate?: number, log?: (line: string) => void}} options
 */
export async function searchMaxRates(targets, { start, growth, precision, confirmFail, maxSteps, minRate = 1, log = () => {} }) {
  const states = targets.map((t) => ({ target: t, lo: 0, hi: Infinity, next: start, steps: [], done: false, best: null, pendingConfirm: false }));
  const round = (r) => (r >= 100 ? Math.round(r / 10) * 10 : Math.max(1, Math.round(r)));

  while (states.some((s) => !s.done)) {
    for (const s of states) {
      if (s.done) continue;
      const rate = s.next;
      const result = await s.target.run(rate);
      s.steps.push(result);
      log(`${s.target.name.padEnd(8)} ${String(rate).padStart(6)} msg/s  ${describe(result)}`);
      if (result.pass) {
        s.pendingConfirm = false;
        if (rate > s.lo) {
          s.lo = rate;
          s.best = result;
        }
      } else if (confirmFail && !s.pendingConfirm) {
        s.pendingConfirm = true; // same rate once more
        continue;
      } else {
        s.pendingConfirm = false;
        s.hi = Math.min(s.hi, rate);
      }
      if (s.hi === Infinity) s.next = round(s.lo * growth);
      else if (s.lo === 0) s.next = round(s.hi / growth);
      else s.next = round(Math.sqrt(s.lo * s.hi));
      const converged = s.hi !== Infinity && s.lo > 0 && (s.hi / s.lo <= precision || s.next <= s.lo || s.next >= s.hi);
      if (converged || s.steps.length >= maxSteps || (s.lo === 0 && s.next < minRate)) s.done = true;
    }
  }
  return states.map((s) => ({ name: s.target.name, maxRate: s.lo, atMax: s.best, steps: s.steps }));
}

export function describe(r) {
  const ms = (v) => (v === null ? '-' : v.toFixed(1));
  const parts = [
    r.pass ? 'pass' : 'FAIL',
    `ack p50 ${ms(r.ack.p50)} p99 ${ms(r.ack.p99)} ms`,
    `delivery p99 ${ms(r.delivery.p99)} ms`,
    `lost ${r.lost}`,
  ];
  if (r.ackErrors > 0) parts.push(`ack errors ${r.ackErrors} (${r.firstError})`);
  if (r.duplicates > 0) parts.push(`duplicates ${r.duplicates}`);
  if (r.serverCpu !== null) parts.push(`server cpu ${Math.round(r.serverCpu * 100)}%`);
  parts.push(`generator cpu ${Math.round(r.generatorCpu * 100)}%`);
  if (r.reconnected > 0) parts.push(`reconnected ${r.reconnected}`);
  return parts.join(', ');
}
