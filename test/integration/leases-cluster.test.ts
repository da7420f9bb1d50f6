import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { connectReady, waitFor, type Payload } from '../helpers/ws.js';

// docs/leases.md across two nodes on one database: overlapping leases requested at once on both
// nodes have one winner; lease:updated reaches members' sockets on both nodes; an expiry is
// announced once with both nodes sweeping.

const available = await servicesAvailable('leases across nodes', ['redis']);

describe.runIf(available)('leases across two nodes', () => {
  let cluster: TestNodes;
  let onA: Api;
  let onB: Api;
  let agents: TestAgent[];
  let roomId: string;

  beforeAll(async () => {
    cluster = await startTestNodes(2, { config: { testMinLeaseSeconds: 1 } });
    [onA, onB] = cluster.nodes.map((node) => new Api(node.url)) as [Api, Api];
    const admin = await newAdmin(onA);
    agents = await Promise.all(Array.from({ length: 6 }, () => newAgent(onA)));
    roomId = (await newRoom(onA, admin, agents)).id;
  });
  afterAll(() => cluster?.close());

  it('overlapping leases requested at once on two nodes: exactly one granted, the others 409 naming it', async () => {
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(agents.map((agent, i) =>
        (i % 2 === 0 ? onA : onB).post(`/api/v1/rooms/${roomId}/leases`, { resource: i % 3 === 0 ? `r${round}/` : `r${round}/same.ts` }, { jwt: agent.jwt })));
      const won = answers.filter((a) => a.status === 201);
      expect(won, JSON.stringify(answers.map((a) => a.status))).toHaveLength(1);
      for (const lost of answers.filter((a) => a.status !== 201)) {
        expect(lost.status).toBe(409);
        expect(lost.body.details.conflicts.map((l: Payload) => l.id)).toEqual([won[0]!.body.id]);
      }
    }
    const fences = (await onB.get(`/api/v1/rooms/${roomId}/leases`, { jwt: agents[0]!.jwt })).body.leases.map((l: Payload) => l.fence);
    expect(fences).toEqual([1, 2, 3]);
  });

  it('lease:updated reaches members on both nodes; the expiry is announced once', async () => {
    const sockets = await Promise.all([connectReady(cluster.nodes[0]!.url, agents[1]!.jwt), connectReady(cluster.nodes[1]!.url, agents[2]!.jwt)]);
    try {
      const expired: Payload[] = [];
      for (const { socket } of sockets) socket.on('lease:updated', (e: Payload) => { if (e.state === 'expired' && e.lease.resource === 'short') expired.push(e); });
      const granted = sockets.map(({ socket }) => waitFor(socket, 'lease:updated', (e: Payload) => e.state === 'granted' && e.lease.resource === 'short'));
      expect((await onB.post(`/api/v1/rooms/${roomId}/leases`, { resource: 'short', ttlSeconds: 1 }, { jwt: agents[3]!.jwt })).status).toBe(201);
      await Promise.all(granted);
      await waitUntil('the expiry reaches both sockets', () => expired.length >= 2, 10_000, 50);
      await waitToProveAbsence(1500);
      expect(expired).toHaveLength(2);
    } finally {
      for (const { socket } of sockets) socket.disconnect();
    }
  });
});
