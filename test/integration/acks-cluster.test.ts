import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, TestAgent, TestRoom } from '../helpers/api.js';
import { TEST_DIALECT } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTwoNodeRoom, type TwoNodeRoom } from '../helpers/two-nodes.js';
import { connectReady, record, roundTrip } from '../helpers/ws.js';
import { waitUntil } from '../helpers/wait.js';

// docs/acknowledgements.md with several nodes: message:acked reaches the sender's sockets on every
// node, and concurrent acknowledgements on two nodes are one (one ackedAt, one announcement).

const available = await servicesAvailable('acknowledgements across nodes', ['redis']);

interface Acked { roomId: string; messageId: string; agentId: string; at: string }

describe.runIf(available)(`acknowledgements across two nodes (${TEST_DIALECT})`, () => {
  let cluster: TwoNodeRoom;
  let onA: Api;
  let onB: Api;
  let reader: TestAgent;
  let writer: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    cluster = await startTwoNodeRoom();
    ({ onA, onB, reader, writer, room } = cluster);
  });
  afterAll(() => cluster?.close());

  const askReader = async (body: string): Promise<string> => {
    const sent = await onA.post(`/api/v1/rooms/${room.id}/messages`, { body, ackRequired: true, mentions: [reader.id] }, { jwt: writer.jwt });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    return sent.body.id as string;
  };

  it('an acknowledgement on node B reaches the sender\'s socket on node A (and not the reader\'s)', async () => {
    const { socket: senderOnA } = await connectReady(cluster.nodes.nodes[0]!.url, writer.jwt);
    const { socket: readerOnA } = await connectReady(cluster.nodes.nodes[0]!.url, reader.jwt);
    try {
      const seen = record<Acked>(senderOnA, 'message:acked');
      const seenByReader = record<Acked>(readerOnA, 'message:acked');
      const messageId = await askReader('confirm from the other node');
      const acked = await onB.post(`/api/v1/rooms/${room.id}/messages/${messageId}/ack`, {}, { jwt: reader.jwt });
      expect(acked.status).toBe(200);
      await waitUntil('message:acked on node A', () => seen.length === 1);
      expect(seen[0]).toEqual({ roomId: room.id, messageId, agentId: reader.id, at: acked.body.ackedAt });
      await roundTrip(readerOnA);
      expect(seenByReader).toEqual([]);
    } finally {
      senderOnA.disconnect();
      readerOnA.disconnect();
    }
  });

  it('concurrent acknowledgements on two nodes: one ackedAt, one announcement, counted once', async () => {
    const { socket: senderOnA } = await connectReady(cluster.nodes.nodes[0]!.url, writer.jwt);
    const { socket: senderOnB } = await connectReady(cluster.nodes.nodes[1]!.url, writer.jwt);
    try {
      const seenA = record<Acked>(senderOnA, 'message:acked');
      const seenB = record<Acked>(senderOnB, 'message:acked');
      for (let round = 0; round < 5; round++) {
        const messageId = await askReader(`race ${round}`);
        const answers = await Promise.all([onA, onB, onA, onB].map((api) => api.post(`/api/v1/rooms/${room.id}/messages/${messageId}/ack`, {}, { jwt: reader.jwt })));
        expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
        expect(new Set(answers.map((a) => a.body.ackedAt as string)).size).toBe(1);
        await waitUntil('the announcement on both of the sender\'s sockets', () => seenA.some((e) => e.messageId === messageId) && seenB.some((e) => e.messageId === messageId));
        await roundTrip(senderOnA);
        await roundTrip(senderOnB);
        expect(seenA.filter((e) => e.messageId === messageId)).toEqual([{ roomId: room.id, messageId, agentId: reader.id, at: answers[0]!.body.ackedAt }]);
        expect(seenB.filter((e) => e.messageId === messageId)).toHaveLength(1);
        const listing = await onB.get(`/api/v1/rooms/${room.id}/messages/${messageId}/acks`, { jwt: writer.jwt });
        expect(listing.body).toEqual({ acked: [{ agentId: reader.id, at: answers[0]!.body.ackedAt }], pending: [] });
        const history = await onA.get(`/api/v1/rooms/${room.id}/messages?limit=1`, { jwt: writer.jwt });
        expect(history.body.messages[0]).toMatchObject({ id: messageId, ack: { required: 1, acked: 1 } });
      }
    } finally {
      senderOnA.disconnect();
      senderOnB.disconnect();
    }
  });
});
