import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, bootstrapAdmin, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, disconnected } from '../helpers/ws.js';
import { waitUntil } from '../helpers/wait.js';
import { servicesAvailable } from '../helpers/services.js';

type Member = { agentId: string; name: string; displayName: string; role: string; joinedAt: string; online: boolean };
const UNKNOWN_ROOM = '01900000-0000-7000-8000-000000000000';
const members = async (api: Api, roomId: string, jwt?: string) => api.get(`/api/v1/rooms/${roomId}/members`, jwt === undefined ? {} : { jwt });

describe('GET /api/v1/rooms/:id/members', () => {
  const t = useTestServer();

  it('lists the members in the order they joined, with names, role, joinedAt and online', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: bob.id })).status).toBe(201);

    const { socket } = await connectReady(t.server.url, alice.jwt);
    try {
      const res = await members(t.api, room.id, bob.jwt);
      expect(res.status).toBe(200);
      const list = res.body.members as Member[];
      expect(list.map((m) => m.agentId).sort()).toEqual([admin.id, alice.id, bob.id].sort());
      expect(list.at(-1)).toEqual({ agentId: bob.id, name: bob.name, displayName: `Test ${bob.name}`, role: 'agent', joinedAt: expect.any(String), online: false, activity: null });
      expect(list.find((m) => m.agentId === alice.id)?.online).toBe(true);
      expect(list.find((m) => m.agentId === admin.id)?.role).toBe('admin');
      const joined = list.map((m) => m.joinedAt);
      expect([...joined].sort()).toEqual(joined);
    } finally {
      const gone = disconnected(socket);
      socket.disconnect();
      await gone;
    }
    await waitUntil('alice offline in the member list', async () =>
      (await members(t.api, room.id, bob.jwt)).body.members.find((m: Member) => m.agentId === alice.id)?.online === false);
  });

  it('needs a JWT (401); unknown room 404 ROOM_NOT_FOUND; a bad id 400; open mode: any agent may list', async () => {
    const { id: roomId } = await newRoom(t.api, await newAdmin(t.api));
    const outsider = await newAgent(t.api);
    expect((await members(t.api, roomId)).status).toBe(401);
    expect(await members(t.api, UNKNOWN_ROOM, outsider.jwt)).toMatchObject({ status: 404, body: { error: 'Room not found' } });
    expect((await members(t.api, 'not-a-uuid', outsider.jwt)).status).toBe(400);
    expect((await members(t.api, roomId, outsider.jwt)).status).toBe(200);
  });
});

describe('GET /api/v1/rooms/:id/members in strict mode', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });

  it('answers members only: a non-member gets 403, even an admin', async () => {
    const root = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    const member = await newAgent(t.api, { asJwt: root.jwt });
    const outsider = await newAgent(t.api, { asJwt: root.jwt });
    const otherAdmin = await newAgent(t.api, { role: 'admin', asJwt: root.jwt });
    const room = (await t.api.post('/rooms', { slug: `m-${Date.now()}`, name: 'M', members: [member.id] }, { jwt: root.jwt })).body as { id: string };
    expect((await members(t.api, room.id, member.jwt)).body.members.map((m: Member) => m.agentId).sort()).toEqual([root.id, member.id].sort());
    expect((await members(t.api, room.id, outsider.jwt)).status).toBe(403);
    expect((await members(t.api, room.id, otherAdmin.jwt)).status).toBe(403);
    expect((await members(t.api, UNKNOWN_ROOM, member.jwt)).status).toBe(404);
  });
});

const redisReady = await servicesAvailable('room members across nodes', ['redis']);

describe.skipIf(!redisReady)('GET /api/v1/rooms/:id/members across nodes', () => {
  let cluster: TestNodes;
  let alice: TestAgent;
  let roomId: string;
  beforeAll(async () => {
    cluster = await startTestNodes(2);
    const api = new Api(cluster.nodes[0]!.url);
    const admin = await newAdmin(api);
    alice = await newAgent(api);
    roomId = (await newRoom(api, admin, [alice])).id;
  });
  afterAll(() => cluster?.close());

  it('shows a member online on node B while its only connection is on node A', async () => {
    const [a, b] = cluster.nodes;
    const apiB = new Api(b!.url);
    const { socket } = await connectReady(a!.url, alice.jwt);
    try {
      await waitUntil('alice online on node B', async () =>
        (await members(apiB, roomId, alice.jwt)).body.members.find((m: Member) => m.agentId === alice.id)?.online === true);
    } finally {
      socket.disconnect();
    }
  });
});
