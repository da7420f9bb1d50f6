import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { startTestNodes, TEST_DIALECT, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { sleep, waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { ENDPOINT_IN_FLIGHT_MAX } from '../../src/core/webhooks/delivery-worker.js';
import { startSilentServer, timeArrivals } from '../helpers/silent-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { connectReady } from '../helpers/ws.js';

// docs/webhooks.md: "with several nodes each [delivery] is attempted by one node at a time", and
// `offline` reads the presence of every node. Two nodes on one database: on PostgreSQL they claim
// with FOR UPDATE SKIP LOCKED; on SQLite (one file, two servers in this process) the write lock
// orders the claims.

const available = await servicesAvailable('webhooks across nodes', ['redis']);

describe.runIf(available)(`webhooks across two nodes (${TEST_DIALECT})`, () => {
  let cluster: TestNodes;
  let onA: Api;
  let onB: Api;
  let receiver: WebhookReceiver;
  let admin: TestAgent;
  let owner: TestAgent;
  let roomId: string;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    cluster = await startTestNodes(2, { config: { webhooks: { retryScheduleSeconds: [1, 1], allowPrivateTargets: true } } });
    [onA, onB] = cluster.nodes.map((node) => new Api(node.url)) as [Api, Api];
    admin = await newAdmin(onA);
    owner = await newAgent(onA);
    roomId = (await newRoom(onA, admin, [owner])).id;
  });
  afterAll(async () => {
    await cluster?.close();
    await receiver?.close();
  });

  it('an endpoint registered on one node gets the next message committed on the other, which had found none before', async () => {
    // B commits with no endpoint anywhere (its outbox remembers "none"), then A registers one.
    await sendMessage(onB, admin, roomId, 'before any endpoint');
    const hook = (await onA.post(`/api/v1/agents/${owner.id}/webhooks`, { url: receiver.url, mode: 'always' }, { jwt: owner.jwt })).body as { id: string };
    const after = await sendMessage(onB, admin, roomId, 'right after the registration');
    await waitUntil('the delivery', () => receiver.received.length >= 1);
    // Longer than a poll of both nodes (1 s): a delivery for the other message would be in by now.
    await waitToProveAbsence(1_500);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.message.id)).toEqual([after.id]);
    await onA.delete(`/api/v1/agents/${owner.id}/webhooks/${hook.id}`, { jwt: owner.jwt });
    receiver.received.length = 0;
  });

  it('every message is delivered exactly once, whichever node committed it and however slowly the receiver answers', async () => {
    const hook = (await onA.post(`/api/v1/agents/${owner.id}/webhooks`, { url: receiver.url, mode: 'always' }, { jwt: owner.jwt })).body as { id: string };
    // Slow answers keep attempts in flight while both nodes poll for due deliveries.
    receiver.respond = () => sleep(150).then(() => 200);
    const sent: string[] = [];
    const sends = Array.from({ length: 40 }, (_, i) => sendMessage(i % 2 === 0 ? onA : onB, admin, roomId, `m${i}`).then((m) => sent.push(m.id)));
    await Promise.all(sends);
    await waitUntil('40 deliveries', () => receiver.received.length >= 40, 30_000);
    // Longer than a poll of both nodes: any second attempt would have been made by now.
    await waitToProveAbsence(2_500);
    const messageIds = receiver.received.map((r) => JSON.parse(r.body).data.message.id as string);
    expect(receiver.received).toHaveLength(40);
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(40);
    expect(new Set(messageIds)).toEqual(new Set(sent));
    const log = (await onB.get(`/api/v1/agents/${owner.id}/webhooks/${hook.id}/deliveries?limit=100`, { jwt: owner.jwt })).body.deliveries as { status: string; attempt: number }[];
    expect(log).toHaveLength(40);
    expect(log.every((d) => d.status === 'delivered' && d.attempt === 1)).toBe(true);
    await onA.delete(`/api/v1/agents/${owner.id}/webhooks/${hook.id}`, { jwt: owner.jwt });
  });

  it('offline mode reads every node\'s presence: a socket on node A suppresses a message committed on node B', async () => {
    receiver.received.length = 0;
    receiver.respond = () => 200;
    await onA.post(`/api/v1/agents/${owner.id}/webhooks`, { url: receiver.url }, { jwt: owner.jwt });
    const { socket } = await connectReady(cluster.nodes[0]!.url, owner.jwt);
    await sendMessage(onB, admin, roomId, 'while connected to A');
    socket.disconnect();
    await waitUntil('the agent offline everywhere', async () => (await cluster.nodes[1]!.app.ctx.presence.onlineAgents([owner.id])).size === 0);
    const after = await sendMessage(onB, admin, roomId, 'after');
    await waitUntil('the delivery', () => receiver.received.length >= 1);
    // Longer than a poll of both nodes (1 s): a delivery for the other message would be in by now.
    await waitToProveAbsence(1_500);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.message.id)).toEqual([after.id]);
  });

  // docs/webhooks.md, "Fairness": both nodes claim endpoint by endpoint, so neither fills its slots
  // with the backlog of a receiver that never answers.
  it("with two nodes claiming, a receiver that never answers, with a backlog, does not delay another agent's", async () => {
    const silent = await startSilentServer();
    const healthy = await startWebhookReceiver();
    try {
      const [slow, fine] = [await newAgent(onA), await newAgent(onA)];
      const room = (await newRoom(onA, admin, [slow, fine])).id;
      expect((await onA.post(`/api/v1/agents/${slow.id}/webhooks`, { url: silent.url, mode: 'always' }, { jwt: slow.jwt })).status).toBe(201);
      for (let i = 0; i < 100; i++) await sendMessage(i % 2 === 0 ? onA : onB, admin, room, `backlog ${i}`);
      expect((await onB.post(`/api/v1/agents/${fine.id}/webhooks`, { url: healthy.url, mode: 'always' }, { jwt: fine.jwt })).status).toBe(201);
      const arrivals = timeArrivals(healthy);
      const sent = new Map<string, number>();
      for (let i = 0; i < 60; i++) {
        const message = await sendMessage(i % 2 === 0 ? onA : onB, admin, room, `for fine ${i}`);
        sent.set(message.id, Date.parse(message.createdAt));
      }
      await waitUntil('all 60 at the healthy receiver', () => [...sent.keys()].every((id) => arrivals.has(id)), 20_000);
      const slowest = Math.max(...[...sent].map(([id, at]) => arrivals.get(id)! - at));
      expect(slowest).toBeLessThan(5_000);
      expect(healthy.received).toHaveLength(60);
      // Each node holds at most its per-endpoint bound of attempts to the silent receiver.
      expect(silent.connections()).toBeLessThanOrEqual(2 * ENDPOINT_IN_FLIGHT_MAX);
    } finally {
      await silent.close();
      await healthy.close();
    }
  }, 60_000);
});
