import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage, type Api, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startTwoNodeRoom, type TwoNodeRoom } from '../helpers/two-nodes.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';

// docs/catch-up.md and docs/protocol.md, Attention: an attention inbox held on one node is woken by
// a message for the caller's attention committed on another, and by no other message.

const available = await servicesAvailable('attention inbox across nodes', ['redis']);

describe.runIf(available)('GET /api/v1/inbox?filter=attention&wait= across two nodes', () => {
  let cluster: TwoNodeRoom;
  let onA: Api;
  let onB: Api;
  let reader: TestAgent;
  let writer: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    // Two nodes on one database (the suite's engine) and the test Redis.
    cluster = await startTwoNodeRoom();
    ({ onA, onB, reader, writer, room } = cluster);
  });
  afterAll(() => cluster?.close());

  it('held on node B: a plain message from node A leaves it held, a mention from node A wakes it', async () => {
    const held = onB.get('/api/v1/inbox?filter=attention&wait=20', { jwt: reader.jwt });
    let answered = false;
    void held.then(() => (answered = true));
    await waitUntil('the request held on node B', () => cluster.nodes.nodes[1]!.app.ctx.inboxWaiters.size === 1);
    await sendMessage(onA, writer, room.id, 'not for the reader');
    await waitToProveAbsence(500);
    expect(answered).toBe(false);
    const sentAt = Date.now();
    const mention = await onA.post(`/api/v1/rooms/${room.id}/messages`, { body: 'reader, look', mentions: [reader.id] }, { jwt: writer.jwt });
    expect(mention.status).toBe(201);
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ unreadTotal: 2, attentionTotal: 1, hasMore: false });
    expect(res.body.messages.map((m: { id: string; attention: boolean }) => [m.id, m.attention])).toEqual([[mention.body.id, true]]);
    // Woken, not answered at the end of the wait.
    expect(Date.now() - sentAt).toBeLessThan(5_000);
  });
});
