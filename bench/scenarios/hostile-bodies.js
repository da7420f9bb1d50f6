import { connect } from 'node:net';
import { join } from 'node:path';
import { newHistogram, summarize } from '../lib/histogram.js';
import { startProbe } from '../lib/probe.js';
import { startService } from '../lib/service.js';

/**
 * One hostile request over a raw socket: the head, then the whole body whatever the server does
 * (as an attacker would), resolved with the status the server answered (0: none).
 */
function hostileRequest(url, body) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let head = '';
    socket.on('data', (chunk) => {
      if (head.length < 64) head += chunk.toString('latin1');
    });
    socket.on('error', () => undefined); // the server closes while the upload goes on
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
    socket.on('connect', () => {
      socket.write(`POST /api/v1/sessions HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${body.length}\r\n\r\n`);
      socket.end(body);
    });
  });
}

/** `connections` loops sending `body` one after another for `durationSeconds`; counts the statuses. */
async function storm({ url, body, connections, durationSeconds }) {
  const statuses = {};
  const until = Date.now() + durationSeconds * 1000;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (Date.now() < until) {
      const status = await hostileRequest(url, body);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  }));
  const count = (test) => Object.entries(statuses).filter(([s]) => test(Number(s))).reduce((a, [, n]) => a + n, 0);
  return { requests: count(() => true), statuses, client4xx: count((s) => s >= 400 && s < 500), accepted: count((s) => s > 0 && s < 400), server5xx: count((s) => s >= 500), unanswered: count((s) => s === 0) };
}

/**
 * Scenario 7: bodies without credentials that cost the server CPU. Twelve clients send
 * `POST /api/v1/sessions` bodies one after another, each in full: 1 MiB of nested arrays (refused by
 * the route's body limit, 413, from its Content-Length) and small deeply nested ones (refused by
 * the nesting limit before parsing, 400), while `/healthz` is probed open-loop every 20 ms.
 * Before the per-route limits each 1 MiB body cost about 0.23 s of CPU and twelve stalled
 * `/healthz` for 2 to 3.7 s. Target: /healthz p99 under 50 ms.
 */
export async function hostileBodiesScenario(bench) {
  const { quick, tmp, log } = bench;
  const seconds = quick ? 2 : 10;
  const service = await startService({
    name: 'service-hostile',
    databaseUrl: `sqlite:${join(tmp, 'hostile.sqlite')}`,
    jwtSecret: bench.jwtSecret,
    profileDir: bench.profileDir,
    // The default per-IP limit (100 a minute) would refuse most of them with 429 before any body
    // is read; the point is what a body costs, so the limit is out of the way.
    env: { RATE_LIMIT_ANON_PER_MINUTE: '10000000' },
  });
  try {
    const url = `${service.url}/api/v1/sessions`;
    const nested = Buffer.from(`${'['.repeat(512 * 1024)}${']'.repeat(512 * 1024)}`);
    const deepSmall = Buffer.from(`${'['.repeat(2000)}${']'.repeat(2000)}`);
    const health = newHistogram();
    const probe = startProbe(`${service.url}/healthz`, 20, health);
    const cpu0 = service.proc.cpu();
    const [big, deep] = await Promise.all([
      storm({ url, body: nested, connections: 8, durationSeconds: seconds }),
      storm({ url, body: deepSmall, connections: 4, durationSeconds: seconds }),
    ]);
    const cpu1 = service.proc.cpu();
    const probed = await probe.stop();
    const requests = big.requests + deep.requests;
    const serverCpuPerRequestMs = cpu0 !== null && requests > 0 ? Math.round(((cpu1 - cpu0) / requests) * 1e6) / 1e3 : null;
    log(`1 MiB nested arrays  ${big.requests} sent: ${JSON.stringify(big.statuses)} (status: count; 0 = no answer)`);
    log(`deep small bodies    ${deep.requests} sent: ${JSON.stringify(deep.statuses)}`);
    log(`server CPU per hostile request ${serverCpuPerRequestMs ?? '-'} ms; /healthz p50 ${probed.p50} p99 ${probed.p99} max ${probed.max} ms (${probed.failures + probed.unanswered} failed)`);
    if (big.accepted + deep.accepted + big.server5xx + deep.server5xx > 0) throw new Error('a hostile body was accepted or failed the server');
    return {
      secondsPerRound: seconds,
      nestedMiB: big,
      deepSmall: deep,
      serverCpuPerRequestMs,
      healthz: { ...summarize(health), sent: probed.sent, failures: probed.failures, unanswered: probed.unanswered, intervalMs: 20 },
    };
  } finally {
    await service.proc.stop();
  }
}
