import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// Each node answers membership checks from memory; a removal on one node must reach the others'.
const ready = await servicesAvailable('membership cache across nodes', ['redis']);

describe.skipIf(!ready)('membership checks on two nodes sharing one database and one Redis', () => {
  let cluster: TestNodes;
  let nodeA: RunningApp;
  let nodeB: RunningApp;
  let a: Api;
  let b: Api;
  let admin: TestAgent;
  let member: TestAgent;

  beforeAll(async () => {
    cluster = await startTestNodes(2);
    [nodeA, nodeB] = cluster.nodes.map((n) => n.app) as [RunningApp, RunningApp];
    a = new Api(nodeA.url);
    b = new Api(nodeB.url);
    admin = await newAdmin(a);
    member = await newAgent(a);
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('refuses sends on node B soon after node A removed the sender, well before cache entries expire', async () => {
    const room = await newRoom(a, admin, [member]);
    const sendOnB = (body: string) => b.post(`/api/v1/rooms/${room.id}/messages`, { body }, { jwt: member.jwt });
    // Node B now knows the membership.
    expect((await sendOnB('one')).status).toBe(201);
    expect((await sendOnB('two')).status).toBe(201);

    expect((await a.delete(`/rooms/${room.id}/members/${member.id}`)).status).toBe(204);
    // Entries live 5 s with several nodes: only the announcement can make this pass sooner.
    await waitUntil('node B refuses the removed member', async () => (await sendOnB('again')).status === 403, 2000, 20);

    // Added back on node A: node B accepts again (a refusal is never cached).
    expect((await a.post(`/rooms/${room.id}/members`, { agentId: member.id })).status).toBe(201);
    expect((await sendOnB('back')).status).toBe(201);
  });
});
