import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('the whole REST flow', () => {
  let server: TestServer;
  let api: Api;
  beforeAll(async () => {
    server = await startTestServer();
    api = new Api(server.url);
  });
  afterAll(() => server.close());

  it('creates an admin, a token, a session, a room, a message, and reads it back', async () => {
    const admin = await newAdmin(api);
    const member = await newAgent(api);
    const room = await newRoom(api, admin, [member]);
    const sent = await sendMessage(api, member, room.id, 'hello');
    const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: admin.jwt });
    expect(history.status).toBe(200);
    expect(history.body).toEqual({
      messages: [{ id: sent.id, roomId: room.id, senderId: member.id, body: 'hello', createdAt: sent.createdAt, seq: 1 }],
      nextCursor: sent.id,
      hasMore: false,
    });
  });
});
