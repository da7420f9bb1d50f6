import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { newAdmin, newAgent, newRoom, uniqueName, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const SLUG_PATTERN_MESSAGE = 'must match pattern ^[a-z0-9-]{1,64}$';
const UNKNOWN_ID = '0190a5d0-0000-7000-8000-000000000000';

describe('rooms (open mode)', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let member: TestAgent;
  let outsider: TestAgent;
  beforeAll(async () => {
    admin = await newAdmin(api);
    [member, outsider] = await Promise.all([newAgent(api), newAgent(api)]);
  });

  const asAdmin = () => ({ headers: { 'x-agent-id': admin.id } });
  const roomInput = (extra: Record<string, unknown> = {}) => {
    const slug = uniqueName('room');
    return { slug, name: `Room ${slug}`, ...extra };
  };
  const membersOf = async (roomId: string): Promise<string[]> => {
    const rows = await server.app.ctx.database.db.selectFrom('room_members').select('agent_id').where('room_id', '=', roomId).execute();
    return rows.map((r) => r.agent_id).sort();
  };

  describe('POST /rooms', () => {
    it('creates a room with X-Agent-Id of an admin: 201 Room, creator and members become members', async () => {
      const input = roomInput({ members: [member.id] });
      const res = await api.post('/rooms', input, asAdmin());
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: expect.any(String), slug: input.slug, name: input.name, kind: 'group', createdBy: admin.id, createdAt: expect.stringMatching(/\.\d{3}Z$/), lastSeq: 0, retentionDays: null, legalHold: false });
      expect(await membersOf(res.body.id)).toEqual([admin.id, member.id].sort());
    });

    it('members is optional: the creator alone is a member', async () => {
      const res = await api.post('/rooms', roomInput(), asAdmin());
      expect(res.status).toBe(201);
      expect(await membersOf(res.body.id)).toEqual([admin.id]);
    });

    it('tolerates the creator and duplicates in members, and upper-case ids', async () => {
      const res = await api.post('/rooms', roomInput({ members: [admin.id, member.id.toUpperCase(), member.id] }), asAdmin());
      expect(res.status).toBe(201);
      expect(await membersOf(res.body.id)).toEqual([admin.id, member.id].sort());
    });

    it('accepts an admin JWT instead of X-Agent-Id', async () => {
      const res = await api.post('/rooms', roomInput(), { jwt: admin.jwt });
      expect(res.status).toBe(201);
      expect(res.body.createdBy).toBe(admin.id);
      expect(await membersOf(res.body.id)).toEqual([admin.id]);
    });

    it('401 when X-Agent-Id is missing, not a UUID, or not an existing agent', async () => {
      for (const headers of [{} as Record<string, string>, { 'x-agent-id': 'admin' }, { 'x-agent-id': '' }, { 'x-agent-id': UNKNOWN_ID }]) {
        const res = await api.post('/rooms', roomInput(), { headers });
        expect(res.status, JSON.stringify(headers)).toBe(401);
        expect(res.body).toEqual({ error: expect.any(String) });
      }
    });

    it('403 for a non-admin agent, by X-Agent-Id or by JWT', async () => {
      const byHeader = await api.post('/rooms', roomInput(), { headers: { 'x-agent-id': member.id } });
      expect(byHeader.status).toBe(403);
      expect(byHeader.body).toEqual({ error: expect.any(String) });
      const byJwt = await api.post('/rooms', roomInput(), { jwt: member.jwt });
      expect(byJwt.status).toBe(403);
    });

    it('authenticates before validating: a non-admin with a bad body gets 403', async () => {
      const res = await api.post('/rooms', { slug: 'BAD' }, { headers: { 'x-agent-id': member.id } });
      expect(res.status).toBe(403);
    });

    it.each([
      ['uppercase', 'Room'],
      ['underscore', 'a_room'],
      ['a space', 'a room'],
      ['empty', ''],
      ['65 characters', 'r'.repeat(65)],
      ['a non-string', 42],
    ])('rejects a slug with %s: 400 details.slug', async (_case, slug) => {
      const res = await api.post('/rooms', roomInput({ slug }), asAdmin());
      expect(res.status).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['slug']);
      if (typeof slug === 'string') expect(res.body.details.slug).toBe(SLUG_PATTERN_MESSAGE);
    });

    it('accepts slugs at the limits of the rules (leading hyphen allowed, 64 chars)', async () => {
      for (const slug of [`-${uniqueName('r')}`, `${uniqueName('x')}${'9'.repeat(64)}`.slice(-64)]) {
        const res = await api.post('/rooms', { slug, name: 'x' }, asAdmin());
        expect(res.status, slug).toBe(201);
      }
    });

    it('rejects a name outside 1..128 code points, missing fields and non-object bodies', async () => {
      for (const name of ['', 'n'.repeat(129), '🏠'.repeat(129)]) {
        const res = await api.post('/rooms', roomInput({ name }), asAdmin());
        expect(res.status).toBe(400);
        expect(Object.keys(res.body.details)).toEqual(['name']);
      }
      expect((await api.post('/rooms', roomInput({ name: '🏠'.repeat(128) }), asAdmin())).status).toBe(201);
      const missing = await api.post('/rooms', {}, asAdmin());
      expect(missing.body.details).toEqual({ slug: 'is required', name: 'is required' });
      const array = await api.request('POST', '/rooms', { rawBody: '[]', ...asAdmin() });
      expect(array.status).toBe(400);
      expect(array.body.details).toEqual({ body: 'must be a JSON object' });
    });

    it('rejects members that are not an array of UUIDs', async () => {
      const notArray = await api.post('/rooms', roomInput({ members: member.id }), asAdmin());
      expect(notArray.status).toBe(400);
      expect(notArray.body.details).toEqual({ members: 'must be an array' });
      const badItem = await api.post('/rooms', roomInput({ members: [member.id, 'nope'] }), asAdmin());
      expect(badItem.status).toBe(400);
      // Keyed by the request's field; the message names the item.
      expect(badItem.body.details).toEqual({ members: expect.stringMatching(/^members\[1\]: /) });
    });

    it('400 for members naming an unknown agent, and nothing is created', async () => {
      const input = roomInput({ members: [member.id, UNKNOWN_ID] });
      const res = await api.post('/rooms', input, asAdmin());
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), details: { members: expect.stringContaining(UNKNOWN_ID) } });
      const rooms = await api.get('/rooms');
      expect(rooms.body.map((r: { slug: string }) => r.slug)).not.toContain(input.slug);
      // The slug is still free.
      expect((await api.post('/rooms', { slug: input.slug, name: 'x' }, asAdmin())).status).toBe(201);
    });

    it('409 on a duplicate slug, and the original room is unchanged', async () => {
      const input = roomInput();
      const first = await api.post('/rooms', input, asAdmin());
      const second = await api.post('/rooms', { ...input, name: 'Another', members: [member.id] }, asAdmin());
      expect(second.status).toBe(409);
      expect(second.body).toEqual({ error: expect.stringContaining(input.slug) });
      const rooms = await api.get('/rooms');
      expect(rooms.body.filter((r: { slug: string }) => r.slug === input.slug)).toEqual([first.body]);
      expect(await membersOf(first.body.id)).toEqual([admin.id]);
    });

    it('writes a room-created audit record', async () => {
      const res = await api.post('/rooms', roomInput({ members: [member.id] }), asAdmin());
      const records = await listAudit(server.app.ctx.database.db, 'room-created', 1000);
      expect(records.find((r) => r.subjectId === res.body.id)).toMatchObject({ actorId: admin.id, detail: { slug: res.body.slug, members: 2 } });
    });
  });

  describe('GET /rooms and GET /api/v1/rooms', () => {
    it('GET /rooms returns a JSON array of all rooms; no authentication needed in open mode', async () => {
      const room = await newRoom(api, admin);
      const res = await api.get('/rooms');
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      expect(res.body).toContainEqual(room);
      for (const r of res.body) expect(Object.keys(r).sort()).toEqual(['createdAt', 'createdBy', 'id', 'kind', 'lastSeq', 'legalHold', 'name', 'retentionDays', 'slug']);
    });

    it('GET /api/v1/rooms returns {rooms: [...]} with the same rooms', async () => {
      const room = await newRoom(api, admin);
      const [plain, versioned] = await Promise.all([api.get('/rooms'), api.get('/api/v1/rooms', { jwt: outsider.jwt })]);
      expect(versioned.status).toBe(200);
      expect(Object.keys(versioned.body)).toEqual(['rooms']);
      expect(versioned.body.rooms).toEqual(plain.body);
      expect(versioned.body.rooms).toContainEqual(room);
    });
  });

  describe('membership', () => {
    it('POST /rooms/:id/members adds a member: 201 {roomId, agentId, joinedAt}', async () => {
      const room = await newRoom(api, admin);
      const res = await api.post(`/rooms/${room.id}/members`, { agentId: member.id });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ roomId: room.id, agentId: member.id, joinedAt: expect.stringMatching(/\.\d{3}Z$/) });
      expect(await membersOf(room.id)).toEqual([admin.id, member.id].sort());
      // The new member can now send in the room.
      expect((await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'hi' }, { jwt: member.jwt })).status).toBe(201);
    });

    it('409 when the agent is already a member', async () => {
      const room = await newRoom(api, admin, [member]);
      const res = await api.post(`/rooms/${room.id}/members`, { agentId: member.id.toUpperCase() });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.any(String) });
    });

    it('404 for an unknown room or agent; 400 for bad ids or bodies', async () => {
      const room = await newRoom(api, admin);
      const noRoom = await api.post(`/rooms/${UNKNOWN_ID}/members`, { agentId: member.id });
      expect(noRoom.status).toBe(404);
      expect(noRoom.body).toEqual({ error: 'Room not found' });
      const noAgent = await api.post(`/rooms/${room.id}/members`, { agentId: UNKNOWN_ID });
      expect(noAgent.status).toBe(404);
      expect(noAgent.body).toEqual({ error: 'Agent not found' });
      const badRoom = await api.post('/rooms/general/members', { agentId: member.id });
      expect(badRoom.status).toBe(400);
      expect(badRoom.body.details).toEqual({ id: 'must be a UUID' });
      const badAgent = await api.post(`/rooms/${room.id}/members`, { agentId: 'someone' });
      expect(badAgent.status).toBe(400);
      expect(Object.keys(badAgent.body.details)).toEqual(['agentId']);
      const missing = await api.post(`/rooms/${room.id}/members`, {});
      expect(missing.body.details).toEqual({ agentId: 'is required' });
    });

    it('DELETE /rooms/:roomId/members/:agentId removes a member: 204, then sending is 403', async () => {
      const room = await newRoom(api, admin, [member]);
      const res = await api.delete(`/rooms/${room.id}/members/${member.id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBe('');
      expect(await membersOf(room.id)).toEqual([admin.id]);
      expect((await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'hi' }, { jwt: member.jwt })).status).toBe(403);
      // And the membership can be added again.
      expect((await api.post(`/rooms/${room.id}/members`, { agentId: member.id })).status).toBe(201);
    });

    it('DELETE answers 404 for an unknown room, agent or membership, and 400 for bad ids', async () => {
      const room = await newRoom(api, admin);
      const cases: [string, string][] = [
        [`/rooms/${UNKNOWN_ID}/members/${member.id}`, 'Room not found'],
        [`/rooms/${room.id}/members/${UNKNOWN_ID}`, 'Agent not found'],
        [`/rooms/${room.id}/members/${outsider.id}`, 'Membership not found'],
      ];
      for (const [path, error] of cases) {
        const res = await api.delete(path);
        expect(res.status, path).toBe(404);
        expect(res.body).toEqual({ error });
      }
      const badRoom = await api.delete(`/rooms/x/members/${member.id}`);
      expect(badRoom.status).toBe(400);
      expect(badRoom.body.details).toEqual({ roomId: 'must be a UUID' });
      const badAgent = await api.delete(`/rooms/${room.id}/members/x`);
      expect(badAgent.status).toBe(400);
      expect(badAgent.body.details).toEqual({ agentId: 'must be a UUID' });
    });
  });
});
