import { describe, expect, it } from 'vitest';
import { AmsClient, AmsError, type MessageAcked } from '@agent-messaging/client';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { newAdminPairRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/acknowledgements.md through the client library and `ams`: send with importance and
// ackRequired, ack, the acks listing, the messageAcked event, `ams ack`, `ams acks`, `ams inbox --awaiting`.

describe('acknowledgements: the client library and ams', () => {
  const { server, api } = useTestServer();

  it('sends, acknowledges and lists; the sender hears messageAcked; ams ack and ams acks', async () => {
    await ensureBuilt();
    const { alice, bob, room } = await newAdminPairRoom(api);
    const sender = new AmsClient({ url: server.url, apiToken: alice.apiToken });
    const reader = new AmsClient({ url: server.url, apiToken: bob.apiToken });
    try {
      await sender.connect();
      const heard: MessageAcked[] = [];
      sender.on('messageAcked', (event) => heard.push(event));
      const asked = await sender.send(room.id, 'please confirm', { mentions: [bob.id], ackRequired: true, importance: 'high' });
      expect(asked).toMatchObject({ importance: 'high', ack: { required: 1, acked: 0 } });
      expect((await reader.inbox({ filter: 'ack' })).messages.map((m) => m.id)).toEqual([asked.id]);
      const { ackedAt } = await reader.ack(room.slug, asked.id);
      expect(await reader.ack(room.id, asked.id)).toEqual({ ackedAt });
      await waitUntil('messageAcked', () => heard.length === 1);
      expect(heard[0]).toEqual({ roomId: room.id, messageId: asked.id, agentId: bob.id, at: ackedAt });
      expect(await sender.acks(room.id, asked.id)).toEqual({ acked: [{ agentId: bob.id, at: ackedAt }], pending: [] });
      const refused = await reader.acks(room.id, asked.id).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(AmsError);
      const plain = await sender.send(room.id, 'nothing asked');
      expect(plain).toMatchObject({ importance: 'normal', ack: null });
      expect(await reader.ack(room.id, plain.id).catch((err: unknown) => (err as AmsError).status)).toBe(409);

      // ams: the same service.
      const second = await sender.send(room.id, 'confirm again', { ackRequired: true, importance: 'urgent' });
      const env = { AMS_URL: server.url, AMS_API_TOKEN: bob.apiToken };
      const awaiting = await runAms(env, 'inbox', '--awaiting');
      expect(awaiting).toMatchObject({ code: 0, stderr: '' });
      expect(awaiting.stdout).toContain('confirm again');
      const acked = await runAms(env, 'ack', room.slug, second.id);
      expect(acked).toMatchObject({ code: 0, stderr: '' });
      expect(acked.stdout).toContain(`acknowledged ${second.id}`);
      const asJson = await runAms(env, 'ack', room.slug, second.id, '--json');
      expect(JSON.parse(asJson.stdout)).toEqual({ ackedAt: expect.any(String) });
      const notAsked = await runAms(env, 'ack', room.slug, plain.id);
      expect(notAsked.code).not.toBe(0);
      expect(notAsked.stderr).toMatch(/CONFLICT|acknowledg/i);
      const listing = await runAms({ AMS_URL: server.url, AMS_API_TOKEN: alice.apiToken }, 'acks', room.slug, second.id);
      expect(listing).toMatchObject({ code: 0, stderr: '' });
      // The room's members but alice: the admin who made it (pending) and bob (acknowledged).
      expect(listing.stdout).toContain('1 of 2 acknowledged');
      expect((await runAms(env, 'inbox', '--awaiting')).stdout).toContain('nothing awaits your acknowledgement');
    } finally {
      await sender.close();
      await reader.close();
    }
  });
});
