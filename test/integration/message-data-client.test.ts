import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Message } from '@agent-messaging/client';
import { newAdminPairRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useClients } from '../helpers/clients.js';
import { ensureBuilt } from '../helpers/build.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/protocol.md, Messages (data and attachments) through the client library and `ams send --data`.

describe('message data and attachments in the client library and ams', { timeout: 120_000 }, () => {
  const t = useTestServer();
  const { client, ams } = useClients(t);
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  beforeAll(async () => {
    await ensureBuilt();
    ({ alice, bob, room } = await newAdminPairRoom(t.api));
  }, 180_000);

  /** A completed file of `uploader`, as an upload leaves it. */
  const seedFile = async (uploader: TestAgent) => {
    const id = randomUUID();
    const now = new Date().toISOString();
    await t.server.app.ctx.database.db.insertInto('files').values({
      id, name: 'verdict.json', content_type: 'application/json', size: 2, sha256: 'cd'.repeat(32), uploader_id: uploader.id, created_at: now, completed_at: now,
    }).execute();
    return id;
  };

  it('send and dm take data and attachments; the typed Message carries them, live and in history', async () => {
    const a = client(alice);
    const b = client(bob);
    await b.connect();
    const seen: Message[] = [];
    b.on('message', (m) => seen.push(m));
    const fileId = await seedFile(alice);

    const sent = await a.send(room.slug, 'with a verdict', { data: { verdict: 'pass', checks: [1, 2] }, attachments: [fileId] });
    const attachment = { id: fileId, name: 'verdict.json', contentType: 'application/json', size: 2, sha256: 'cd'.repeat(32) };
    expect(sent).toMatchObject({ data: { verdict: 'pass', checks: [1, 2] }, attachments: [attachment] });
    const plain = await a.send(room.slug, 'plain');
    expect(plain).toMatchObject({ data: null, attachments: [] });
    await waitUntil('both messages live', () => seen.length >= 2);
    expect(seen[0]).toMatchObject({ id: sent.id, senderId: alice.id, data: { verdict: 'pass', checks: [1, 2] }, attachments: [attachment] });
    expect(seen[1]).toMatchObject({ id: plain.id, data: null, attachments: [] });
    const history = await b.history(room.slug, { limit: 2 });
    expect(history.messages[1]).toMatchObject({ id: sent.id, data: { verdict: 'pass', checks: [1, 2] }, attachments: [attachment] });

    const { message } = await a.dm(bob.id, 'direct with data', { data: { n: 1 } });
    expect(message).toMatchObject({ data: { n: 1 }, attachments: [] });
    await expect(a.send(room.slug, 'bad', { data: { deep: [[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]] } })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  describe('ams send --data', () => {

    it('sends the JSON object; a --data that is not JSON or not an object is refused, naming --data', async () => {
      const fileId = await seedFile(alice);
      const res = await ams(alice.apiToken, 'send', '--json', '--data', '{"result": {"ok": true}}', '--attach', fileId, room.slug, 'from', 'ams');
      expect(res).toMatchObject({ code: 0, stderr: '' });
      const printed = JSON.parse(res.stdout) as Message;
      expect(printed).toMatchObject({ body: 'from ams', data: { result: { ok: true } }, attachments: [{ id: fileId }] });
      const stored = await t.api.get(`/api/v1/rooms/${room.id}/messages?limit=1`, { jwt: bob.jwt });
      expect(stored.body.messages[0]).toMatchObject({ id: printed.id, data: { result: { ok: true } } });

      expect(await ams(alice.apiToken, 'send', '--data', '{not json', room.slug, 'x')).toMatchObject({ code: 2, stderr: expect.stringContaining('--data must be JSON') });
      expect(await ams(alice.apiToken, 'send', '--data', '[1, 2]', room.slug, 'x')).toMatchObject({ code: 1, stderr: expect.stringContaining('--data must be a JSON object') });
      expect(await ams(alice.apiToken, 'send', '--attach', randomUUID(), room.slug, 'x')).toMatchObject({ code: 1, stderr: expect.stringContaining('--attach must be ids of completed files') });
      const dm = await ams(alice.apiToken, 'dm', '--json', '--data', '{"n": 2}', bob.name, 'dm', 'from', 'ams');
      expect(dm).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(dm.stdout)).toMatchObject({ message: { body: 'dm from ams', data: { n: 2 } } });
    });
  });
});
