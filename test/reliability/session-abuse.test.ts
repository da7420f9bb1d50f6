import { randomBytes } from 'node:crypto';
import { Agent, get } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { createExchangeGate } from '../../src/limits/exchange-gate.js';
import { AppError } from '../../src/errors.js';
import { newAdmin, newAgent, type ApiResponse, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { sleep } from '../helpers/wait.js';

/** Token-exchange abuse: bounded Argon2id work, fast refusals, and no oracle in the answers. */
const CONCURRENCY = 8;

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
const unknownToken = (): string => `agt_${hex(6)}_${hex(32)}`;

/** GET /healthz over the given agent's connection; resolves with the status. */
function healthz(base: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(`${base}/healthz`, { agent, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('healthz timed out')));
    req.on('error', reject);
  });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

describe('the exchange gate', () => {
  it('runs at most `limit` at once, queues as many again, refuses the rest at once with 503, and frees every slot', async () => {
    const gate = createExchangeGate(2, 2);
    const releases: (() => void)[] = [];
    const work = () => new Promise<string>((resolve) => releases.push(() => resolve('done')));
    const running = [gate.run(work), gate.run(work), gate.run(work), gate.run(work)];
    expect([gate.active, gate.waiting]).toEqual([2, 2]);
    const refused = await gate.run(work).then(() => null, (err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).status).toBe(503);

    releases.shift()!();
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect([gate.active, gate.waiting]).toEqual([2, 1]); // the slot went to a waiter
    while (releases.length > 0 || gate.active > 0) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(await Promise.all(running)).toEqual(['done', 'done', 'done', 'done']);
    expect([gate.active, gate.waiting]).toEqual([0, 0]);

    // A failing exchange frees its slot too.
    await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(gate.active).toBe(0);
  });
});

describe('a storm of bad API tokens', () => {
  const { server, api } = useTestServer({ config: { sessionExchangeConcurrency: CONCURRENCY } });
  let agent: TestAgent;

  beforeAll(async () => {
    // (one core is kept for the event loop, so on this 2-core box one exchange hashes at a time)
    await newAdmin(api);
    agent = await newAgent(api);
  });

  const exchange = (token: string): Promise<ApiResponse> => api.exchange(token);

  it('admits a bounded number, refuses the rest fast with 503 {error}, keeps /healthz fast, and recovers', async () => {
    // A sustained storm: 30 clients sending bad tokens back to back for 2 s, far more than the gate
    // admits (CONCURRENCY in flight, of which one hashes at a time).
    const results: { status: number; body: unknown; ms: number }[] = [];
    const until = performance.now() + 2000;
    const attacker = async (): Promise<void> => {
      while (performance.now() < until) {
        const start = performance.now();
        const res = await exchange(unknownToken());
        results.push({ status: res.status, body: res.body, ms: performance.now() - start });
      }
    };
    const health: number[] = [];
    // The prober has its own kept-alive connection, as a load balancer's health check would, so
    // it queues neither in the attackers' client pool nor behind their connection setup.
    const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await healthz(server.url, probeAgent)).toBe(200);
    const prober = async (): Promise<void> => {
      while (performance.now() < until) {
        const start = performance.now();
        expect(await healthz(server.url, probeAgent)).toBe(200);
        health.push(performance.now() - start);
        await sleep(10);
      }
    };
    await Promise.all([...Array.from({ length: 30 }, attacker), prober()]);
    probeAgent.destroy();

    const refused = results.filter((r) => r.status === 503);
    const denied = results.filter((r) => r.status === 401);
    expect(refused.length + denied.length).toBe(results.length);
    expect(refused.length).toBeGreaterThan(denied.length); // most of the storm never reaches Argon2id
    for (const r of refused) expect(r.body).toEqual({ error: expect.any(String) });
    // Nothing waits long: the queue is bounded, so even a queued exchange is answered soon.
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(10_000);
    // Loose, on a shared 2-core box where this test's own client uses the same event loop:
    // /healthz kept being served while the storm ran. This is not a benchmark.
    expect(health.length).toBeGreaterThanOrEqual(5);
    expect(percentile(health, 99)).toBeLessThan(1000);

    // Every slot came back: exactly as many exchanges as the gate admits all get an answer, and a
    // good token still works.
    const admitted = await Promise.all(Array.from({ length: CONCURRENCY }, () => exchange(unknownToken())));
    expect(admitted.map((r) => r.status)).toEqual(Array(CONCURRENCY).fill(401));
    expect((await exchange(agent.apiToken)).status).toBe(201);
    process.stdout.write(`exchange storm: ${results.length} exchanges, ${denied.length} x 401, ${refused.length} x 503; /healthz p50 ${percentile(health, 50).toFixed(1)} ms, p99 ${percentile(health, 99).toFixed(1)} ms over ${health.length} probes\n`);
  });
});

describe('exchanges that fail say nothing about why', () => {
  const t = useTestServer();
  let agent: TestAgent;

  beforeAll(async () => {
    await newAdmin(t.api);
    agent = await newAgent(t.api);
  });

  const exchange = async (token: string): Promise<{ res: ApiResponse; ms: number }> => {
    const start = performance.now();
    const res = await t.api.exchange(token);
    return { res, ms: performance.now() - start };
  };
  const wrongSecret = (): string => `${agent.prefix}_${hex(32)}`;

  it('unknown prefix, wrong secret, malformed, revoked and expired tokens: one status and one body', async () => {
    const expired = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: {}, expiresAt: '2000-01-01T00:00:00.000Z' });
    const revoked = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: {} });
    expect((await t.api.delete(`/api/v1/tokens/${revoked.body.prefix}`)).status).toBe(204);
    const answers = await Promise.all([unknownToken(), wrongSecret(), 'agt_nothex_short', `${agent.prefix}_`, expired.body.token, revoked.body.token].map(exchange));
    for (const { res } of answers) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(answers[0]!.res.body);
    }
    expect(answers[0]!.res.body).toEqual({ error: expect.any(String) });
    // The body-field form answers the same.
    const viaBody = await t.api.post('/api/v1/sessions', { apiToken: unknownToken() });
    expect([viaBody.status, viaBody.body]).toEqual([401, answers[0]!.res.body]);
  });

  it('unknown-prefix and wrong-secret exchanges take statistically the same time (one Argon2id verify each)', async () => {
    const unknown: number[] = [];
    const wrong: number[] = [];
    await exchange(unknownToken()); // warm-up
    for (let i = 0; i < 15; i++) {
      unknown.push((await exchange(unknownToken())).ms);
      wrong.push((await exchange(wrongSecret())).ms);
    }
    const ratio = percentile(unknown, 50) / percentile(wrong, 50);
    expect(ratio).toBeGreaterThan(0.5);
    expect(ratio).toBeLessThan(2);
  });
});
