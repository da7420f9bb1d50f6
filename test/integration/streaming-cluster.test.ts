import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, record, roundTrip, type ClientSocket } from '../helpers/ws.js';

interface Delta { messageId: string; offset: number; text: string }
interface Updated { id: string; body: string; streamEnd: string | null }

const IDLE_SECONDS = 2;
const ready = await servicesAvailable('streamed messages across nodes', ['redis']);

// docs/streaming.md: deltas reach members on every node; the idle end happens once, on one node.
describe.skipIf(!ready)('streamed messages on two nodes', () => {
  let nodes: TestNodes;
  const sockets: ClientSocket[] = [];
  beforeAll(async () => {
    nodes = await startTestNodes(2, { config: { streamIdleSeconds: IDLE_SECONDS } });
  }, 60_000);
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect();
    await nodes?.close();
  });

  it('a writer on node A, a reader on node B: the deltas arrive in order, the idle end comes once', async () => {
    const [nodeA, nodeB] = nodes.nodes as [typeof nodes.nodes[0], typeof nodes.nodes[0]];
    const onA = new Api(nodeA.url);
    const admin = await newAdmin(onA);
    const [writer, reader, other] = [await newAgent(onA), await newAgent(onA), await newAgent(onA)];
    const room = await newRoom(onA, admin, [writer, reader, other]);
    const w = (await connectReady(nodeA.url, writer.jwt)).socket;
    const r = (await connectReady(nodeB.url, reader.jwt)).socket;
    const o = (await connectReady(nodeA.url, other.jwt)).socket;
    sockets.push(w, r, o);
    const deltas = record<Delta>(r, 'message:delta');
    const updatesB = record<Updated>(r, 'message:updated');
    const updatesA = record<Updated>(o, 'message:updated');
    const sent = await emitWithAck<{ messageId: string }>(w, 'message:send', { roomId: room.id, body: '', streaming: true });
    let expected = '';
    for (let i = 0; i < 40; i++) {
      const text = `t${i} `;
      expected += text;
      const ack = await emitWithAck<{ ok: boolean; length: number }>(w, 'message:append', { roomId: room.id, messageId: sent.messageId, text });
      expect(ack.length).toBe(expected.length);
    }
    await waitUntil('the deltas on node B', () => deltas.filter((d) => d.messageId === sent.messageId).map((d) => d.text).join('') === expected);
    let length = 0;
    for (const d of deltas.filter((x) => x.messageId === sent.messageId)) {
      expect(d.offset).toBe(length);
      length += d.text.length;
    }
    // No end: both nodes sweep, one ends it, every member hears it once.
    await waitUntil('the idle end', () => updatesB.some((u) => u.id === sent.messageId) && updatesA.some((u) => u.id === sent.messageId), (IDLE_SECONDS + 6) * 1000);
    await roundTrip(r);
    await roundTrip(o);
    expect(updatesB.filter((u) => u.id === sent.messageId)).toEqual([expect.objectContaining({ body: expected, streamEnd: 'interrupted' })]);
    expect(updatesA.filter((u) => u.id === sent.messageId)).toHaveLength(1);
  });
});

// A node killed with kill -9 in the middle of a stream: the stored prefix survives, another node ends it.
const pgReady = await servicesAvailable('streamed messages: a node killed mid-stream', ['postgres', 'redis']);

describe.skipIf(!pgReady)('a node killed mid-stream (separate processes, PostgreSQL)', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({ nodes: 2, env: { STREAM_IDLE_SECONDS: String(IDLE_SECONDS), RATE_LIMIT_AGENT_PER_MINUTE: '100000' } });
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  });

  it('the stored prefix survives and the message is ended interrupted by the other node within the idle time', async () => {
    const a = new Api(cluster.nodes[0]!.url);
    const b = new Api(cluster.nodes[1]!.url);
    const admin = await newAdmin(b);
    const [writer, reader] = [await newAgent(b), await newAgent(b)];
    const room = await newRoom(b, admin, [writer, reader]);
    const w = (await connectReady(cluster.nodes[0]!.url, writer.jwt)).socket;
    const r = (await connectReady(cluster.nodes[1]!.url, reader.jwt)).socket;
    try {
      const updates = record<Updated>(r, 'message:updated');
      const sent = await emitWithAck<{ messageId: string }>(w, 'message:send', { roomId: room.id, body: '', streaming: true });
      await emitWithAck(w, 'message:append', { roomId: room.id, messageId: sent.messageId, text: 'a prefix that was stored' });
      const stored = async () => ((await b.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0`, { jwt: reader.jwt })).body.messages as Updated[]).find((m) => m.id === sent.messageId);
      await waitUntil('the prefix is stored', async () => (await stored())?.body === 'a prefix that was stored');
      expect((await a.get('/healthz')).status).toBe(200);
      const killedAt = Date.now();
      await cluster.nodes[0]!.kill('SIGKILL');
      await waitUntil('the other node ends it', () => updates.some((u) => u.id === sent.messageId), (IDLE_SECONDS + 6) * 1000);
      expect(Date.now() - killedAt).toBeLessThan((IDLE_SECONDS + 3) * 1000);
      expect(updates.filter((u) => u.id === sent.messageId)).toEqual([expect.objectContaining({ body: 'a prefix that was stored', streamEnd: 'interrupted' })]);
      expect(await stored()).toMatchObject({ body: 'a prefix that was stored', streaming: false, streamEnd: 'interrupted' });
    } finally {
      w.disconnect();
      r.disconnect();
    }
  });
});
