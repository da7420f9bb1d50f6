import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_IN_FLIGHT_MAX, SLOW_ATTEMPT_MS } from '../../src/core/webhooks/delivery-worker.js';
import type { Api} from '../helpers/api.js';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { TEST_DIALECT } from '../helpers/server.js';
import { startSilentServer, timeArrivals, type SilentServer } from '../helpers/silent-server.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

// docs/webhooks.md, "Fairness": one agent's receivers that hang or fail cannot delay another
// agent's deliveries. Agent A has a receiver that accepts connections and never answers (each
// attempt holds its slot for the whole 10 s answer time) and one that redirects (every attempt
// fails, and is retried), with a backlog of pending deliveries; agent B's healthy receiver must
// still get every message promptly.

describe(`webhook fairness across endpoints (${TEST_DIALECT})`, () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [1, 1, 1], allowPrivateTargets: true } } });
  let silent: SilentServer;
  let redirecting: WebhookReceiver;
  let healthy: WebhookReceiver;
  let admin: TestAgent;
  let a: TestAgent;
  let b: TestAgent;
  let roomId: string;

  beforeAll(async () => {
    [silent, redirecting, healthy] = await Promise.all([startSilentServer(), startWebhookReceiver(), startWebhookReceiver()]);
    redirecting.respond = () => 302;
    admin = await newAdmin(t.api);
    [a, b] = [await newAgent(t.api), await newAgent(t.api)];
    roomId = (await newRoom(t.api, admin, [a, b])).id;
  });
  afterAll(async () => {
    await t.server.close();
    await Promise.all([silent?.close(), redirecting?.close(), healthy?.close()]);
  });

  const register = async (api: Api, owner: TestAgent, url: string): Promise<string> => {
    const res = await api.post(`/api/v1/agents/${owner.id}/webhooks`, { url, mode: 'always' }, { jwt: owner.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return (res.body as { id: string }).id;
  };

  it("a receiver that never answers and one that redirects, with a backlog, do not delay another agent's healthy receiver", async () => {
    const silentId = await register(t.api, a, silent.url);
    await register(t.api, a, redirecting.url);
    // A's backlog: 150 deliveries to each of its endpoints, all due at once.
    for (let i = 0; i < 150; i++) await sendMessage(t.api, admin, roomId, `backlog ${i}`);
    await register(t.api, b, healthy.url);
    const arrivals = timeArrivals(healthy);
    const sent = new Map<string, number>();
    for (let i = 0; i < 100; i++) {
      const message = await sendMessage(t.api, admin, roomId, `for b ${i}`);
      sent.set(message.id, Date.parse(message.createdAt));
    }
    await waitUntil('the healthy receiver got all 100 messages', () => [...sent.keys()].every((id) => arrivals.has(id)), 20_000);
    const latencies = [...sent].map(([id, at]) => arrivals.get(id)! - at).sort((x, y) => x - y);
    // Well under the 10 s an attempt of the silent receiver holds its slot: none of B's waited for one.
    expect(latencies.at(-1)!).toBeLessThan(5_000);
    expect(healthy.received).toHaveLength(100);
    // The silent receiver never had more than its per-endpoint bound of attempts at once.
    expect(silent.connections()).toBeLessThanOrEqual(ENDPOINT_IN_FLIGHT_MAX);
    // The redirecting receiver kept being tried meanwhile: its failures hold no slot for long.
    expect(redirecting.received.length).toBeGreaterThan(ENDPOINT_IN_FLIGHT_MAX);

    // After three timeouts in a row the silent endpoint is in back-off as a whole: no new
    // connection, although 150 deliveries are pending for it.
    await waitUntil('the silent receiver\'s attempts timed out', () => silent.open() === 0 && silent.connections() > 0, 20_000);
    const made = silent.connections();
    // No event marks a connection that is not made: two polls of the worker (1 s each) and more.
    await waitToProveAbsence(2_500);
    expect(silent.connections()).toBe(made);
    const log = (await t.api.get(`/api/v1/agents/${a.id}/webhooks/${silentId}/deliveries?limit=100`, { jwt: a.jwt })).body.deliveries as { status: string; attempt: number; error: string | null }[];
    expect(log.every((d) => d.status === 'pending')).toBe(true);
    expect(log.filter((d) => d.attempt > 0).every((d) => d.error === 'no answer within 10 s')).toBe(true);
  }, 60_000);

  // 80 endpoints that never answer (more than a node's 64 slots), 10 for each of 8 agents: each
  // attempt would hold its slot for the whole 10 s; another agent's healthy receiver must not wait.
  it("80 endpoints of 8 agents that never answer do not delay another agent's healthy receiver", async () => {
    const dead = await startSilentServer();
    const fine = await startWebhookReceiver();
    try {
      const owners = await Promise.all(Array.from({ length: 8 }, () => newAgent(t.api)));
      const c = await newAgent(t.api);
      const room = (await newRoom(t.api, admin, [...owners, c])).id;
      for (const [o, owner] of owners.entries()) {
        for (let i = 0; i < 10; i++) await register(t.api, owner, `${dead.url}/${o}/${i}`);
      }
      await register(t.api, c, fine.url);
      const arrivals = timeArrivals(fine);
      const sent = new Map<string, number>();
      for (let i = 0; i < 100; i++) {
        const message = await sendMessage(t.api, admin, room, `for c ${i}`);
        sent.set(message.id, Date.parse(message.createdAt));
      }
      await waitUntil('the healthy receiver got all 100 messages', () => [...sent.keys()].every((id) => arrivals.has(id)), 20_000);
      // Every dead endpoint was tried meanwhile: all 80 held a connection without an answer.
      await waitUntil('all 80 dead endpoints were tried', () => dead.connections() >= 80, 10_000);
      const latencies = [...sent].map(([id, at]) => arrivals.get(id)! - at).sort((x, y) => x - y);
      // A dead endpoint's attempt leaves its slot after SLOW_ATTEMPT_MS (500 ms), far below the 10 s it
      // waits for an answer: none of C's deliveries waited for one to time out.
      expect(latencies.at(-1)!).toBeLessThan(SLOW_ATTEMPT_MS + 2_000);
      expect(fine.received).toHaveLength(100);
    } finally {
      await Promise.all([dead.close(), fine.close()]);
    }
  }, 60_000);
});
