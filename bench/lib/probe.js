import http from 'node:http';
import { newHistogram, recordMs, summarize } from './histogram.js';

/**
 * An open-loop GET probe: one request every `intervalMs` whatever the previous one did, latency
 * from the scheduled time. Used for `/healthz` while the server is busy with something else.
 * `pooled`, if given, is a histogram that also records every latency (one summary over many probes).
 */
export function startProbe(url, intervalMs = 20, pooled = null) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const histogram = newHistogram();
  let failures = 0;
  let sent = 0;
  let stopped = false;
  const t0 = performance.now();
  const fire = (scheduled) => {
    sent++;
    const req = http.get(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode === 200) {
          const ms = performance.now() - scheduled;
          recordMs(histogram, ms);
          if (pooled) recordMs(pooled, ms);
        } else failures++;
      });
    });
    req.on('error', () => failures++);
  };
  let i = 0;
  const tick = () => {
    if (stopped) return;
    const now = performance.now();
    while (t0 + i * intervalMs <= now) fire(t0 + i++ * intervalMs);
    setTimeout(tick, Math.max(0, t0 + i * intervalMs - performance.now()));
  };
  tick();
  return {
    /** Stops firing, lets the last requests finish, and summarises. */
    async stop() {
      stopped = true;
      await new Promise((r) => setTimeout(r, 500));
      agent.destroy();
      const summary = summarize(histogram);
      return { ...summary, sent, failures, unanswered: sent - summary.count - failures };
    },
  };
}
