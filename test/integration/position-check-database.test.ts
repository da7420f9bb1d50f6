import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { startPrivateCluster, type PrivateCluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { connectReady, emitWithAck, record, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';

// docs/catch-up.md "Position checks": after PostgreSQL was away (a commit's answer may have been
// lost, and with it the broadcast), the node tells its sockets their rooms' positions as soon as the
// database answers again. The periodic check is off, so only the interruption can trigger it.
const ready = await servicesAvailable('position check after a PostgreSQL restart', ['postgres-binaries', 'redis-server']);

describe.skipIf(!ready)('position check after a database interruption', () => {
  let cluster: PrivateCluster;
  let api: Api;
  let admin: TestAgent;
  let alice: TestAgent;
  let socket: ClientSocket | undefined;

  beforeAll(async () => {
    cluster = await startPrivateCluster({ nodes: 1, env: { POSITION_CHECK_INTERVAL_MS: '0', RATE_LIMIT_AGENT_PER_MINUTE: '100000', RATE_LIMIT_ANON_PER_MINUTE: '100000' } });
    api = new Api(cluster.nodes[0]!.url);
    admin = await newAdmin(api);
    alice = await newAgent(api);
  }, 120_000);
  afterAll(async () => {
    socket?.disconnect();
    await cluster?.close();
  });

  it('sends room:positions once PostgreSQL is back', async () => {
    const room = await newRoom(api, admin, [alice]);
    const sent = await sendMessage(api, admin, room.id, 'before');
    socket = (await connectReady(cluster.nodes[0]!.url, alice.jwt)).socket;
    const positions = record<Payload>(socket, 'room:positions');

    await cluster.postgres.stop('immediate');
    const refused = await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'while PostgreSQL is down' }, 15_000);
    expect(refused).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    expect(positions).toEqual([]);
    // The same outage reaches an A2A caller as unavailable, not as an internal error: the target
    // agent's lookup is the first thing that needs the database, so the answer is REST's 503.
    const a2a = await api.request('POST', `/a2a/${admin.name}`, {
      rawBody: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'during-outage', role: 'ROLE_USER', parts: [{ text: 'while PostgreSQL is down' }] } } }),
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' }, jwt: alice.jwt,
    });
    expect(a2a.status).toBe(503);
    expect(a2a.body).toEqual({ error: 'Database unavailable' });

    await cluster.postgres.start();
    const told = await waitFor(socket, 'room:positions', () => true, 30_000);
    expect(told).toEqual({ lastSeqs: { [room.id]: sent.seq } });
  }, 90_000);
});
