import { afterEach, describe, expect, it } from 'vitest';
import { AmsClient, AmsError, type Message } from '@agent-messaging/client';
import { roomChannel } from '../../src/realtime/protocol.js';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { testConfig } from '../helpers/config.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The client library and the position check (docs/catch-up.md), and two findings of a chaos run:
// a send that timed out may have been stored, and many concurrent sends must not warn.

const clients: AmsClient[] = [];
const clientOf = (url: string, agent: TestAgent): AmsClient => {
  const client = new AmsClient({ url, apiToken: agent.apiToken });
  clients.push(client);
  return client;
};
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe('AmsClient and room:positions', () => {
  const t = useTestServer({ config: { ws: { ...testConfig().ws, positionCheckIntervalMs: 200 } } });

  it('delivers a message whose broadcast it missed while staying connected, from room:positions', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const client = clientOf(t.server.url, alice);
    const delivered: Message[] = [];
    client.on('message', (m) => delivered.push(m));
    let disconnects = 0;
    client.on('disconnect', () => disconnects++);
    await client.connect();

    // The broadcast is lost (the socket is out of the room's channel while it is sent).
    const [server] = [...t.server.app.realtime.namespace.sockets.values()].filter((s) => s.data.principal?.agentId === alice.id);
    server!.leave(roomChannel(room.id));
    const missed = await sendMessage(t.api, admin, room.id, 'missed broadcast');
    await waitUntil('delivered from the position check', () => delivered.length === 1, 5000);
    expect(delivered.map((m) => [m.id, m.seq])).toEqual([[missed.id, missed.seq]]);
    expect(disconnects).toBe(0);
  });

  it('fifty concurrent sends: no MaxListenersExceededWarning, each stored once', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const client = clientOf(t.server.url, alice);
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const sent = await Promise.all(Array.from({ length: 50 }, (_, i) => client.send(room.id, `concurrent ${i}`)));
      expect(new Set(sent.map((m) => m.seq)).size).toBe(50);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('a send that timed out says so with its clientMsgId; sending again with it stores the message once', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const client = clientOf(t.server.url, alice);
    const err = await client.send(room.id, 'maybe stored', { timeoutMs: 1 }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(AmsError);
    const timeout = err as AmsError;
    expect(timeout.code).toBe('TIMEOUT');
    const clientMsgId = timeout.details?.clientMsgId;
    expect(clientMsgId).toEqual(expect.any(String));
    const stored = await client.send(room.id, 'maybe stored', { clientMsgId });
    expect(stored.clientMsgId).toBe(clientMsgId);
    const again = await client.send(room.id, 'maybe stored', { clientMsgId });
    expect(again.id).toBe(stored.id);
    const history = await client.history(room.id, { afterSeq: 0 });
    expect(history.messages.filter((m) => m.clientMsgId === clientMsgId)).toHaveLength(1);
  });
});
