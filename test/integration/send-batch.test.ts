import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import type { SendResult } from '../../src/core/messages/messages.service.js';
import type { Principal } from '../../src/core/principal.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * One group commit holding sends to several rooms, and a send that fails for its own data, on the
 * suite's engine (AMS_TEST_DATABASE=postgres: the batch's multi-row statements, docs/scale-out.md).
 * Everything is submitted in one turn of the event loop, so it shares one batch.
 */
describe('a group commit across rooms', () => {
  let server: TestServer;
  let sender: TestAgent;
  const rooms: string[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    sender = await newAgent(api);
    for (let i = 0; i < 3; i++) rooms.push((await newRoom(api, admin, [sender])).id);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('numbers each room 1..n, stores every search entry and audit record, and isolates a duplicate clientMsgId', async () => {
    const { messages, search } = server.app.ctx;
    const principal: Principal = { agentId: sender.id, role: 'agent' };
    const perRoom = 7;
    // Validation and membership checks are awaited per submit; the writes are then queued together.
    const inputs = Array.from({ length: perRoom * rooms.length }, (_, i) => ({ roomId: rooms[i % rooms.length]!, body: `batched word${i} zebra` }));
    const submitted = await Promise.all([
      ...inputs.map((input) => messages.submit(principal, input.roomId, { body: input.body })),
      // The same clientMsgId twice in one batch: the unique index refuses the second inside the
      // transaction; the batch is retried one send at a time and the twin answers with the original.
      messages.submit(principal, rooms[0], { body: 'twin', clientMsgId: 'twin-1' }),
      messages.submit(principal, rooms[0], { body: 'twin', clientMsgId: 'twin-1' }),
    ]);
    const results: SendResult[] = await Promise.all(submitted.map((s) => s.committed));

    const sent = results.slice(0, inputs.length);
    const [twinA, twinB] = results.slice(inputs.length) as [SendResult, SendResult];
    expect(twinA.message.id).toBe(twinB.message.id);
    expect([twinA.created, twinB.created].sort()).toEqual([false, true]);
    // Gapless per room, no number twice (the order is the queue's: submits resolve their checks in any order).
    for (const roomId of rooms) {
      const seqs = [...sent, twinA].filter((r) => r.message.roomId === roomId).map((r) => r.message.seq).sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: roomId === rooms[0] ? perRoom + 1 : perRoom }, (_, i) => i + 1));
    }

    // Stored as acknowledged: the history, the search index and the audit log have each message once.
    const stored = await server.app.ctx.database.db.selectFrom('messages').select(['id', 'seq', 'room_id']).execute();
    expect(stored).toHaveLength(inputs.length + 1);
    for (const r of results) {
      const row = stored.find((s) => s.id === r.message.id);
      expect(row && { seq: Number(row.seq), roomId: row.room_id }).toEqual({ seq: r.message.seq, roomId: r.message.roomId });
    }
    const found = await search.searchMessages(principal, { q: 'zebra', limit: 100 });
    expect(new Set(found.results.map((m) => m.id))).toEqual(new Set(sent.map((r) => r.message.id)));
    const audit = await listAudit(server.app.ctx.database.db, 'message-sent', 1000);
    expect(new Set(audit.map((a) => a.subjectId))).toEqual(new Set(stored.map((s) => s.id)));
    expect(audit).toHaveLength(stored.length);
  });
});
