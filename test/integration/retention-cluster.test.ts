import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// docs/retention.md across two nodes: each node's timer asks for the sweep's turn, one gets it per
// period; what one node's sweep deletes is gone from both.
const available = await servicesAvailable('retention across nodes', ['redis']);
const PERIOD_MS = 1000;

describe.runIf(available)('retention sweep across two nodes', () => {
  let cluster: TestNodes;
  beforeAll(async () => {
    cluster = await startTestNodes(2, { config: { retention: { defaultDays: 0.0001, sweepIntervalMs: PERIOD_MS } } });
  });
  afterAll(() => cluster?.close());

  it('runs once per period across the nodes, and its deletions are seen on both', async () => {
    const [a, b] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]];
    const [onA, onB] = [new Api(a.url), new Api(b.url)];
    const admin = await newAdmin(onA);
    const alice = await newAgent(onA);
    const room = await newRoom(onA, admin, [alice]);
    await sendMessage(onB, alice, room.id, 'short-lived on node B');
    const started = Date.now();
    const sweeps = () => a.app.ctx.retention.sweepsRun + b.app.ctx.retention.sweepsRun;
    const before = sweeps();
    await waitUntil('the message swept', async () => (await onA.get(`/api/v1/rooms/${room.id}/messages`, { jwt: alice.jwt })).body.messages.length === 0, 25_000, 200);
    expect((await onB.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: alice.jwt })).body).toMatchObject({ messages: [], oldestSeq: null, lastSeq: 1 });
    await waitUntil('a few more periods', () => sweeps() - before >= 3, 15_000, 50);
    // A turn is claimed at most once per period: never one sweep per node per period.
    const periods = (Date.now() - started) / PERIOD_MS;
    expect(sweeps() - before).toBeLessThanOrEqual(Math.floor(periods) + 1);
    const due = await sql<{ value: string }>`select value from service_settings where key = 'retention_sweep_due'`.execute(a.app.ctx.database.db);
    expect(new Date(due.rows[0]!.value).getTime()).toBeGreaterThan(started);
  }, 60_000);
});
