import { describe, expect, it } from 'vitest';
import { newAgent, scopedSession, sendMessage, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { emitWithAck, useSockets, waitFor, type Payload } from '../helpers/ws.js';

// docs/websocket.md, dm:open: the WebSocket twin of POST /api/v1/direct-rooms, on the suite's engine.

describe('dm:open', () => {
  const t = useTestServer();
  const connect = useSockets(t);

  it('acknowledges {room}, the same room REST gives either side; both sides hear room:added and receive its messages', async () => {
    const alice: TestAgent = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const [a, b] = [await connect(alice.jwt), await connect(bob.jwt)];
    const heard = waitFor<Payload>(b, 'room:added');
    const ack = await emitWithAck(a, 'dm:open', { agentId: bob.id, requestId: 'r1' });
    const room = ack.room as Payload;
    expect(room).toEqual({
      id: expect.any(String), slug: `dm-${room.id}`, name: [alice.name, bob.name].sort().join(', '), kind: 'direct',
      createdBy: alice.id, createdAt: expect.any(String), lastSeq: 0, retentionDays: null, legalHold: false,
    });
    expect((await heard).room).toMatchObject({ id: room.id, kind: 'direct' });
    expect(await emitWithAck(b, 'dm:open', { agentId: alice.id })).toEqual({ room });
    expect(await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: alice.jwt })).toMatchObject({ status: 200, body: room });
    // The opener's socket is subscribed: the message reaches it without a room:join.
    const got = waitFor<Payload>(a, 'message:new', (m) => m.roomId === room.id);
    await sendMessage(t.api, bob, room.id, 'hello over dm');
    expect((await got).body).toBe('hello over dm');
  });

  it('errors: VALIDATION_ERROR (not a UUID, missing, oneself), NOT_FOUND, FORBIDDEN (disabled; a token without messages:write), as an error event without a callback', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const a = await connect(alice.jwt);
    expect(await emitWithAck(a, 'dm:open', { agentId: 'nope' })).toMatchObject({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('agentId') } });
    expect(await emitWithAck(a, 'dm:open', {})).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
    expect(await emitWithAck(a, 'dm:open', { agentId: alice.id })).toMatchObject({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('agentId') } });
    expect(await emitWithAck(a, 'dm:open', { agentId: '01900000-0000-7000-8000-000000000000' })).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const carol = await newAgent(t.api);
    expect((await t.api.post(`/api/v1/agents/${carol.id}/disable`)).status).toBe(200);
    expect(await emitWithAck(a, 'dm:open', { agentId: carol.id })).toMatchObject({ error: { code: 'FORBIDDEN' } });
    const readOnly = await connect(await scopedSession(t.api, alice, { actions: ['messages:read', 'rooms:read'] }));
    expect(await emitWithAck(readOnly, 'dm:open', { agentId: bob.id })).toMatchObject({ error: { code: 'FORBIDDEN' } });
    const failed = waitFor<Payload>(a, 'error', (e) => e.requestId === 'no-ack');
    a.emit('dm:open', { agentId: 'nope', requestId: 'no-ack' });
    expect(await failed).toMatchObject({ code: 'VALIDATION_ERROR', requestId: 'no-ack' });
    // None of the failures made a room.
    expect(((await emitWithAck(a, 'room:list')).rooms as Payload[]).filter((r) => r.kind === 'direct')).toEqual([]);
  });
});
