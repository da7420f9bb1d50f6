import { beforeAll, describe, expect, it } from 'vitest';
import { type MessageDeleted, type MessageUpdated } from '@agent-messaging/client';
import { newAdminPairRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useClients } from '../helpers/clients.js';
import { ensureBuilt } from '../helpers/build.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/threads-and-edits.md through the client library and the `ams` client.

describe('threads, edits and deletions in the client library and ams', { timeout: 120_000 }, () => {
  const t = useTestServer();
  const { client, ams } = useClients(t);
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  beforeAll(async () => {
    await ensureBuilt();
    ({ alice, bob, room } = await newAdminPairRoom(t.api));
  }, 180_000);

  it('reply, thread, edit, delete; messageUpdated and messageDeleted events', async () => {
    const a = client(alice);
    const b = client(bob);
    await b.connect();
    const updates: MessageUpdated[] = [];
    const deletions: MessageDeleted[] = [];
    b.on('messageUpdated', (u) => updates.push(u));
    b.on('messageDeleted', (d) => deletions.push(d));

    const root = await a.send(room.slug, 'client root');
    const reply = await b.reply(room.slug, root.id, 'client reply');
    expect(reply).toMatchObject({ replyTo: root.id, threadId: root.id });
    const thread = await a.thread(room.slug, reply.id);
    expect(thread.root).toMatchObject({ id: root.id, replyCount: 1 });
    expect(thread.replies.map((r) => r.id)).toEqual([reply.id]);
    expect((await a.thread(room.id, root.id, { afterSeq: reply.seq })).replies).toEqual([]);

    const edited = await a.edit(room.slug, root.id, 'client root, edited');
    expect(edited.editedAt).toEqual(expect.any(String));
    await a.delete(room.id, root.id);
    await waitUntil('both live events', () => updates.length === 1 && deletions.length === 1);
    expect(updates[0]).toEqual({ id: root.id, roomId: room.id, seq: root.seq, body: 'client root, edited', editedAt: edited.editedAt, data: null, attachments: [] });
    expect(deletions[0]).toMatchObject({ id: root.id, roomId: room.id, seq: root.seq });
    await expect(a.delete(room.id, root.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('ams reply, edit, delete', async () => {
    const root = (await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'cli root' }, { jwt: alice.jwt })).body as { id: string };
    const replied = await ams(bob.apiToken, 'reply', '--json', room.slug, root.id, 'cli', 'reply');
    expect(replied).toMatchObject({ code: 0, stderr: '' });
    const reply = JSON.parse(replied.stdout) as { id: string; seq: number; threadId: string; body: string };
    expect(reply).toMatchObject({ threadId: root.id, body: 'cli reply' });
    expect(await ams(bob.apiToken, 'edit', room.slug, reply.id, 'cli', 'reply,', 'edited')).toEqual({ code: 0, stdout: `edited #${reply.seq} in ${room.slug}\n`, stderr: '' });
    expect((await ams(alice.apiToken, 'edit', room.slug, reply.id, 'not mine')).code).not.toBe(0);
    expect(await ams(bob.apiToken, 'delete', room.id, reply.id)).toEqual({ code: 0, stdout: `deleted ${reply.id} in ${room.slug}\n`, stderr: '' });
    expect((await ams(bob.apiToken, 'delete', room.id, reply.id)).code).not.toBe(0);
    const thread = await t.api.get(`/api/v1/rooms/${room.id}/messages/${root.id}/thread`, { jwt: alice.jwt });
    expect(thread.body.replies[0]).toMatchObject({ id: reply.id, body: '', editedAt: expect.any(String), deletedAt: expect.any(String) });
  });
});
