import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { connectReady, emitWithAck, type ClientSocket, type Payload } from '../helpers/ws.js';

// docs/catch-up.md: seq is gapless and unique per room with several nodes writing at once, each node
// group-committing its sends (a commit may hold messages of several rooms).
const ready = await servicesAvailable('multi-node seq tests', ['postgres', 'redis']);

describe.skipIf(!ready)('seq with two nodes on one PostgreSQL', () => {
  let cluster: Cluster;
  let apis: Api[];
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    cluster = await startCluster({
      nodes: 2,
      env: { RATE_LIMIT_AGENT_PER_MINUTE: '100000', RATE_LIMIT_ANON_PER_MINUTE: '100000', WS_EVENTS_PER_SECOND: '10000', WS_ABUSE_EVENTS_PER_SECOND: '10000' },
    });
    apis = cluster.nodes.map((n) => new Api(n.url));
  }, 120_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.disconnect();
  });
  afterAll(() => cluster?.close());

  it('numbers concurrent sends through both nodes (REST and WebSocket) 1..N per room, no gap, no reuse', async () => {
    const admin = await newAdmin(apis[0]!);
    const agents: TestAgent[] = [];
    for (let i = 0; i < 4; i++) agents.push(await newAgent(apis[i % 2]!));
    const rooms = [await newRoom(apis[0]!, admin, agents), await newRoom(apis[1]!, admin, agents)];
    for (const [i, agent] of agents.entries()) {
      const { socket } = await connectReady(cluster.nodes[i % 2]!.url, agent.jwt);
      sockets.push(socket);
    }
    const PER_AGENT = 15;
    type Sent = { roomId: string; id: string; seq: number };
    const sends: Promise<Sent>[] = [];
    for (const [i, agent] of agents.entries()) {
      for (let n = 0; n < PER_AGENT; n++) {
        for (const room of rooms) {
          // Half over REST on the other node, half over the agent's socket.
          if (n % 2 === 0) {
            sends.push(apis[(i + 1) % 2]!.post(`/api/v1/rooms/${room.id}/messages`, { body: `rest ${i}.${n}` }, { jwt: agent.jwt }).then((res) => {
              expect(res.status).toBe(201);
              return { roomId: room.id, id: res.body.id as string, seq: res.body.seq as number };
            }));
          } else {
            sends.push(emitWithAck(sockets[i]!, 'message:send', { roomId: room.id, body: `ws ${i}.${n}` }, 20_000).then((ack: Payload) => {
              expect(ack.error).toBeUndefined();
              return { roomId: room.id, id: ack.messageId as string, seq: ack.seq as number };
            }));
          }
        }
      }
    }
    const sent = await Promise.all(sends);
    const total = agents.length * PER_AGENT;
    for (const room of rooms) {
      const mine = sent.filter((s) => s.roomId === room.id).sort((a, b) => a.seq - b.seq);
      expect(mine.map((s) => s.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      // Either node reads the same numbering back.
      for (const api of apis) {
        const seen: [string, number][] = [];
        let after = 0;
        for (;;) {
          const page = await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=${after}&limit=100`, { jwt: agents[0]!.jwt });
          expect(page.body.lastSeq).toBe(total);
          seen.push(...(page.body.messages as Payload[]).map((m): [string, number] => [m.id, m.seq]));
          if (!page.body.hasMore) break;
          after = seen[seen.length - 1]![1];
        }
        expect(seen).toEqual(mine.map((s) => [s.id, s.seq]));
      }
    }
    const { socket, hello } = await connectReady(cluster.nodes[1]!.url, agents[0]!.jwt);
    sockets.push(socket);
    expect(hello.lastSeqs).toEqual({ [rooms[0]!.id]: total, [rooms[1]!.id]: total });
  });
});
