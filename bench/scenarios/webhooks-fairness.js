import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newHistogram, recordMs, summarize } from '../lib/histogram.js';
import { jwtMinter, startService } from '../lib/service.js';

/** The healthy endpoint's delivery p99 must stay under this beside endpoints that never answer (docs/webhooks.md, "Fairness"). */
export const FAIRNESS_P99_TARGET_MS = 2000;
/** The numbers of endpoints that never answer beside the healthy one, one run each (80 and 1,000). */
const SILENT_ENDPOINTS = [80, 1000];
/** Endpoints per agent owning silent ones (the registration limit): 80 are 8 agents', 1,000 are 100 agents'. */
const ENDPOINTS_PER_AGENT = 10;

/** A receiver on loopback that answers 204 and notes when each message (by id) arrived. */
async function startHealthyReceiver() {
  const arrivals = new Map();
  const server = createHttpServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      arrivals.set(JSON.parse(Buffer.concat(chunks).toString('utf8')).data.message.id, performance.now());
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    arrivals,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/** A TCP server that accepts every connection and never answers: each attempt holds its slot for the whole answer time. */
async function startSilentServer() {
  const sockets = new Set();
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.resume();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    connections: () => connections,
    close: () => new Promise((resolve) => { for (const s of sockets) s.destroy(); server.close(resolve); }),
  };
}

/**
 * One run: a service with `silent` endpoints on a server that never answers, 10 for each of their
 * agents, then one healthy endpoint of another agent; messages sent at `rate` for `seconds`, each
 * recorded for every endpoint; the healthy endpoint's latency from each send's start to its
 * delivery's arrival, and each send's answer time (its commit writes 1 + `silent` deliveries).
 */
async function run(bench, { name, silent, rate, seconds }) {
  const mint = jwtMinter(bench.jwtSecret);
  const healthy = await startHealthyReceiver();
  const silentServer = silent > 0 ? await startSilentServer() : null;
  const service = await startService({
    name, databaseUrl: `sqlite:${join(bench.tmp, `${name}.sqlite`)}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir,
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
  });
  try {
    const admin = await service.api.createAgent('admin');
    const owners = await service.api.createAgents(1 + Math.ceil(silent / ENDPOINTS_PER_AGENT));
    const room = await service.api.createRoom(admin.id, owners.map((o) => o.id));
    const register = (owner, url) =>
      service.api.expect(201, 'POST', `/api/v1/agents/${owner.id}/webhooks`, { body: { url, mode: 'always' }, headers: { authorization: `Bearer ${mint(owner.id, owner.role)}` } });
    for (let i = 0; i < silent; i++) await register(owners[1 + Math.floor(i / ENDPOINTS_PER_AGENT)], `${silentServer.url}/${i}`);
    await register(owners[0], healthy.url);

    const adminJwt = mint(admin.id, 'admin');
    const sentAt = new Map();
    const acks = newHistogram();
    const sends = [];
    const total = Math.round(rate * seconds);
    const t0 = performance.now();
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const started = performance.now();
      sends.push(service.api.request('POST', `/api/v1/rooms/${room.id}/messages`, { body: { body: `fairness ${i}` }, headers: { authorization: `Bearer ${adminJwt}` } })
        .then((res) => {
          recordMs(acks, performance.now() - started);
          if (res.status === 201) sentAt.set(res.body.id, started);
        }));
    }
    await Promise.all(sends);
    // Deliveries still on their way get up to 10 s (longer than one attempt of a silent endpoint).
    const deadline = performance.now() + 10_000;
    while ([...sentAt.keys()].some((id) => !healthy.arrivals.has(id)) && performance.now() < deadline) await sleep(50);
    const histogram = newHistogram();
    let lost = 0;
    for (const [id, started] of sentAt) {
      const arrived = healthy.arrivals.get(id);
      if (arrived === undefined) lost++;
      else recordMs(histogram, arrived - started);
    }
    return { silentEndpoints: silent, sent: sentAt.size, lost, silentConnections: silentServer?.connections() ?? 0, delivery: summarize(histogram), send: summarize(acks) };
  } finally {
    await service.proc.stop();
    await healthy.close();
    await silentServer?.close();
  }
}

/**
 * Webhook fairness: a healthy endpoint's delivery latency beside 80, then 1,000 endpoints (10 per
 * agent, of other agents) whose receiver accepts connections and never answers, against the same
 * load with no such endpoint, in the same run. Messages at 20/s for 40 s (10/s for 12 s with
 * --quick): long enough, in the full run, to cover the first attempts of the silent endpoints (each
 * waiting 10 s for its answer) and their back-off.
 */
export async function webhooksFairnessScenario(bench) {
  const load = bench.quick ? { rate: 10, seconds: 12 } : { rate: 20, seconds: 40 };
  const line = (r) => `p50 ${r.delivery.p50} ms, p99 ${r.delivery.p99} ms, ${r.lost} lost of ${r.sent}; send answer p50 ${r.send.p50} ms, p99 ${r.send.p99} ms`;
  const baseline = await run(bench, { name: 'fairness-baseline', silent: 0, ...load });
  bench.log(`without silent endpoints: ${line(baseline)}`);
  const withSilent = [];
  for (const silent of SILENT_ENDPOINTS) {
    const result = await run(bench, { name: `fairness-silent-${silent}`, silent, ...load });
    bench.log(`with ${silent} silent endpoints: ${line(result)}; ${result.silentConnections} connections to the silent server`);
    withSilent.push(result);
  }
  return { ...load, targetP99Ms: FAIRNESS_P99_TARGET_MS, baseline, withSilent };
}
