import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { connectReady, waitFor } from '../helpers/ws.js';

// Edits and deletions across two `node dist/main.js` processes on one PostgreSQL database and one
// Redis (docs/threads-and-edits.md): message:updated / message:deleted reach the room's sockets on
// the other node, as message:new does.
const ready = await servicesAvailable('multi-node edit tests', ['postgres', 'redis']);

describe.skipIf(!ready)('edits and deletions across two nodes', () => {
  let cluster: Cluster;
  let apis: Api[];
  let admin: TestAgent;
  beforeAll(async () => {
    cluster = await startCluster({ nodes: 2 });
    apis = cluster.nodes.map((n) => new Api(n.url));
    admin = await newAdmin(apis[0]!);
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  });

  it('an edit and a deletion made on node 0 reach a member\'s socket on node 1', async () => {
    const [alice, bob] = [await newAgent(apis[0]!, { asJwt: admin.jwt }), await newAgent(apis[0]!, { asJwt: admin.jwt })];
    const room = await newRoom(apis[0]!, admin, [alice, bob]);
    const { socket } = await connectReady(cluster.nodes[1]!.url, bob.jwt);
    try {
      const sent = await sendMessage(apis[0]!, alice, room.id, 'across nodes');
      const updated = waitFor(socket, 'message:updated', (m: { id: string }) => m.id === sent.id);
      const edit = await apis[0]!.request('PATCH', `/api/v1/rooms/${room.id}/messages/${sent.id}`, { body: { body: 'across nodes, edited' }, jwt: alice.jwt });
      expect(edit.status).toBe(200);
      expect(await updated).toEqual({ id: sent.id, roomId: room.id, seq: sent.seq, body: 'across nodes, edited', editedAt: edit.body.editedAt, data: null, attachments: [] });
      const deleted = waitFor(socket, 'message:deleted', (m: { id: string }) => m.id === sent.id);
      expect((await apis[0]!.request('DELETE', `/api/v1/rooms/${room.id}/messages/${sent.id}`, { jwt: alice.jwt })).status).toBe(204);
      expect(await deleted).toMatchObject({ id: sent.id, roomId: room.id, seq: sent.seq, deletedAt: expect.any(String) });
    } finally {
      socket.disconnect();
    }
  });
});
