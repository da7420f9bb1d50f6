import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

describe('the whole REST flow', () => {
  const t = useTestServer();

  it('creates an admin, a token, a session, a room, a message, and reads it back', async () => {
    const admin = await newAdmin(t.api);
    const member = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [member]);
    const sent = await sendMessage(t.api, member, room.id, 'hello');
    const history = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: admin.jwt });
    expect(history.status).toBe(200);
    expect(history.body).toEqual({
      messages: [{
        id: sent.id, roomId: room.id, senderId: member.id, body: 'hello', createdAt: sent.createdAt, seq: 1,
        threadId: null, replyCount: 0, lastReplyAt: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null,
      }],
      nextCursor: sent.id,
      hasMore: false,
      oldestSeq: 1,
    });
  });
});
