import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import type { DomainEvent } from '../../src/core/events.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { createTestDatabase, startTestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { metricValue } from '../helpers/metrics.js';

/** Idempotent sending over REST: a clientMsgId repeat is the original message, never a second one. */
describe('idempotent REST send (clientMsgId)', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  const published: DomainEvent[] = [];

  beforeAll(async () => {
    server.app.ctx.events.attach({
      publish: (event) => {
        published.push(event);
        return Promise.resolve();
      },
    });
    admin = await newAdmin(api);
    alice = await newAgent(api);
    bob = await newAgent(api);
    room = await newRoom(api, admin, [alice, bob]);
  });

  const send = (agent: TestAgent, roomId: string, body: unknown) => api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
  const created = (roomId: string) => published.filter((e) => e.type === 'message.created' && e.message.roomId === roomId).length;
  const history = async (roomId: string) => {
    const res = await api.get(`/api/v1/rooms/${roomId}/messages?limit=100`, { jwt: admin.jwt });
    expect(res.status).toBe(200);
    return res.body.messages as { id: string; body: string; clientMsgId?: string }[];
  };

  it('answers a repeat with the original message: same id, 200, no second row, no second event or metric', async () => {
    const r = await newRoom(api, admin, [alice]);
    const first = await send(alice, r.id, { body: 'hello once', clientMsgId: 'c-1' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ roomId: r.id, senderId: alice.id, body: 'hello once', clientMsgId: 'c-1' });

    const again = await send(alice, r.id, { body: 'hello once', clientMsgId: 'c-1' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    expect((await history(r.id)).map((m) => m.id)).toEqual([first.body.id]);
    expect(created(r.id)).toBe(1);
    expect(await metricValue(api, 'service_messages_total', { room: r.id })).toBe(1);
    const audit = await listAudit(server.app.ctx.database.db, 'message-sent', 1000);
    expect(audit.filter((a) => a.subjectId === first.body.id)).toHaveLength(1);
  });

  it('a repeat still needs membership: an agent removed from the room gets 403, not the original', async () => {
    const r = await newRoom(api, admin, [bob]);
    expect((await send(bob, r.id, { body: 'before removal', clientMsgId: 'gone' })).status).toBe(201);
    expect((await api.delete(`/rooms/${r.id}/members/${bob.id}`)).status).toBe(204);
    expect((await send(bob, r.id, { body: 'before removal', clientMsgId: 'gone' })).status).toBe(403);
  });

  it('refuses the same clientMsgId with a different body, mentions or replyTo: 409 {error}, nothing stored', async () => {
    const r = await newRoom(api, admin, [alice, bob]);
    const first = await send(alice, r.id, { body: 'original', clientMsgId: 'dup', mentions: [bob.id] });
    expect(first.status).toBe(201);
    for (const changed of [
      { body: 'different', clientMsgId: 'dup', mentions: [bob.id] },
      { body: 'original', clientMsgId: 'dup' },
      { body: 'original', clientMsgId: 'dup', mentions: [bob.id], replyTo: first.body.id },
    ]) {
      const res = await send(alice, r.id, changed);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    // Mentions are compared as a set: order and letter case do not make a different message.
    const sameSet = await send(alice, r.id, { body: 'original', clientMsgId: 'dup', mentions: [bob.id.toUpperCase(), bob.id] });
    expect(sameSet.status).toBe(200);
    expect(sameSet.body.id).toBe(first.body.id);
    expect(await history(r.id)).toHaveLength(1);
    expect(created(r.id)).toBe(1);
  });

  it('validates clientMsgId: a string of 1 to 64 code points', async () => {
    const cases: [unknown, number][] = [
      ['', 400],
      ['x'.repeat(65), 400],
      ['😀'.repeat(65), 400],
      [123, 400],
      [null, 400],
      [['a'], 400],
      ['a\u0000b', 400],
      ['\ud800', 400],
      ['x'.repeat(64), 201],
      ['😀'.repeat(64), 201], // 64 code points, 128 UTF-16 units
      ['a', 201],
    ];
    for (const [clientMsgId, status] of cases) {
      const res = await send(alice, room.id, { body: `validation ${String(clientMsgId).length}`, clientMsgId });
      expect(res.status, JSON.stringify(clientMsgId)).toBe(status);
      if (status === 400) expect(res.body.details).toHaveProperty('clientMsgId');
    }
  });

  it('scopes clientMsgId to (room, sender): other senders and other rooms are separate messages', async () => {
    const other = await newRoom(api, admin, [alice]);
    const a = await send(alice, room.id, { body: 'scoped', clientMsgId: 'scope-1' });
    const b = await send(bob, room.id, { body: 'scoped', clientMsgId: 'scope-1' });
    const c = await send(alice, other.id, { body: 'scoped', clientMsgId: 'scope-1' });
    expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
    expect(new Set([a.body.id, b.body.id, c.body.id]).size).toBe(3);
  });

  it('without clientMsgId, identical sends are distinct messages', async () => {
    const r = await newRoom(api, admin, [alice]);
    const one = await send(alice, r.id, { body: 'same' });
    const two = await send(alice, r.id, { body: 'same' });
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(one.body.id).not.toBe(two.body.id);
    expect(await history(r.id)).toHaveLength(2);
  });

  it('20 concurrent sends of one clientMsgId store exactly one row; all answer with it', async () => {
    const r = await newRoom(api, admin, [alice]);
    const results = await Promise.all(Array.from({ length: 20 }, () => send(alice, r.id, { body: 'race', clientMsgId: 'race-1' })));
    expect(results.filter((x) => x.status === 201)).toHaveLength(1);
    expect(results.filter((x) => x.status === 200)).toHaveLength(19);
    expect(new Set(results.map((x) => x.body.id)).size).toBe(1);
    expect(await history(r.id)).toHaveLength(1);
    expect(created(r.id)).toBe(1);
    expect(await metricValue(api, 'service_messages_total', { room: r.id })).toBe(1);
  });

  it('concurrent sends of one clientMsgId with different bodies: one stored, the others 409', async () => {
    const r = await newRoom(api, admin, [alice]);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => send(alice, r.id, { body: `body ${i}`, clientMsgId: 'race-2' })));
    expect(results.filter((x) => x.status === 201)).toHaveLength(1);
    expect(results.filter((x) => x.status === 409)).toHaveLength(9);
    expect(await history(r.id)).toHaveLength(1);
  });
});

describe('idempotency across a restart', () => {
  it('a repeat after the server restarts on the same database returns the original', async () => {
    const db = await createTestDatabase();
    let server = await startTestServer({ db });
    try {
      let api = new Api(server.url);
      const admin = await newAdmin(api);
      const alice = await newAgent(api);
      const room = await newRoom(api, admin, [alice]);
      const first = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'durable', clientMsgId: 'restart-1' }, { jwt: alice.jwt });
      expect(first.status).toBe(201);

      await server.close({ keepDatabase: true });
      server = await startTestServer({ db });
      api = new Api(server.url);

      const again = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'durable', clientMsgId: 'restart-1' }, { jwt: alice.jwt });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      const conflicting = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'changed', clientMsgId: 'restart-1' }, { jwt: alice.jwt });
      expect(conflicting.status).toBe(409);
      const history = await api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: alice.jwt });
      expect(history.body.messages).toHaveLength(1);
      expect(await metricValue(api, 'service_messages_total', { room: room.id })).toBe(0);
    } finally {
      await server.close();
    }
  });
});
