import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

// Membership checks are answered from memory on a single node: a removal must still take effect at once.
describe('membership checks after membership changes', () => {
  const { api } = useTestServer();
  let admin: TestAgent;
  let member: TestAgent;
  beforeAll(async () => {
    admin = await newAdmin(api);
    member = await newAgent(api);
  });

  const send = (body: string) => api.post(`/api/v1/rooms/${roomId}/messages`, { body }, { jwt: member.jwt });
  let roomId: string;

  it('refuses a send right after the sender was removed, and accepts it again once re-added', async () => {
    roomId = (await newRoom(api, admin, [member])).id;
    expect((await send('one')).status).toBe(201);
    expect((await send('two')).status).toBe(201);

    expect((await api.delete(`/rooms/${roomId}/members/${member.id}`)).status).toBe(204);
    const refused = await send('three');
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'Not a member of this room' });

    expect((await api.post(`/rooms/${roomId}/members`, { agentId: member.id })).status).toBe(201);
    expect((await send('four')).status).toBe(201);
  });

  it('refuses sends that race with the removal once the removal has answered', async () => {
    roomId = (await newRoom(api, admin, [member])).id;
    expect((await send('warm')).status).toBe(201);
    const during = Array.from({ length: 10 }, (_, i) => send(`during ${i}`));
    expect((await api.delete(`/rooms/${roomId}/members/${member.id}`)).status).toBe(204);
    const statuses = (await Promise.all(during)).map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 403)).toBe(true);
    expect((await send('after')).status).toBe(403);
  });
});
