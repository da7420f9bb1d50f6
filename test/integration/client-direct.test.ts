import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AmsClient, AmsError, type Message } from '@agent-messaging/client';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/client.md, Direct rooms: openDirectRoom, dm, the roomAdded/roomRemoved events and `ams dm`.

const clients: AmsClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe('direct rooms in the client library and the ams client', { timeout: 120_000 }, () => {
  const t = useTestServer();
  beforeAll(async () => { await ensureBuilt(); }, 180_000);
  const clientOf = (agent: TestAgent): AmsClient => {
    const client = new AmsClient({ url: t.server.url, apiToken: agent.apiToken });
    clients.push(client);
    return client;
  };

  it('dm by name opens the room; the other side hears roomAdded and gets the message; openDirectRoom gives the same room', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const a = clientOf(alice);
    const b = clientOf(bob);
    const added: { room: { id: string; kind: string } }[] = [];
    const got: Message[] = [];
    b.on('roomAdded', (e) => added.push(e));
    b.on('message', (m) => got.push(m));
    await b.connect();
    const { message, room } = await a.dm(bob.name, 'hello bob');
    expect(room).toMatchObject({ kind: 'direct', slug: `dm-${room.id}`, name: [alice.name, bob.name].sort().join(', ') });
    expect(message).toMatchObject({ roomId: room.id, body: 'hello bob', seq: 1 });
    await waitUntil('bob heard room:added', () => added.length === 1);
    expect(added[0]!.room).toMatchObject({ id: room.id, kind: 'direct' });
    await waitUntil('bob got the message', () => got.some((m) => m.id === message.id));
    expect(await b.openDirectRoom(alice.id)).toMatchObject({ id: room.id });
    expect((await b.dm(alice.id, 'hi alice')).message).toMatchObject({ roomId: room.id, seq: 2 });
    // The room's slug works where rooms are named.
    expect((await a.history(room.slug)).messages.map((m) => m.body)).toEqual(['hi alice', 'hello bob']);
  });

  it('roomRemoved when the agent leaves a room; errors are AmsErrors with the code', async () => {
    const alice = await newAgent(t.api);
    const a = clientOf(alice);
    const removed: string[] = [];
    a.on('roomRemoved', (e) => removed.push(e.roomId));
    await a.connect();
    const admin = await newAgent(t.api, { role: 'admin' });
    const room = await t.api.post('/rooms', { slug: `r-${alice.id.slice(0, 8)}`, name: 'R', members: [alice.id] }, { jwt: admin.jwt });
    expect(room.status).toBe(201);
    expect((await t.api.delete(`/rooms/${room.body.id}/members/${alice.id}`, { jwt: admin.jwt })).status).toBe(204);
    await waitUntil('alice heard room:removed', () => removed.includes(room.body.id));
    await expect(a.dm('no-such-agent-abc', 'x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(a.openDirectRoom(alice.id)).rejects.toBeInstanceOf(AmsError);
    await expect(a.openDirectRoom(alice.id)).rejects.toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
  });

  it('ams dm AGENT TEXT... sends into the direct room (by name or id), --json prints {message, room}', async () => {
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const env = { AMS_URL: t.server.url, AMS_API_TOKEN: alice.apiToken };
    const first = await runAms(env, 'dm', bob.name, 'hello', 'there');
    expect(first).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(/^sent #1 to .+ \(dm-[0-9a-f-]{36}\)\n$/) });
    const second = await runAms(env, 'dm', bob.id, 'again', '--json');
    expect(second).toMatchObject({ code: 0, stderr: '' });
    const { message, room } = JSON.parse(second.stdout) as { message: Message; room: { id: string; kind: string } };
    expect(room.kind).toBe('direct');
    expect(message).toMatchObject({ roomId: room.id, body: 'again', seq: 2 });
    const history = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bob.jwt });
    expect((history.body.messages as { body: string }[]).map((m) => m.body)).toEqual(['again', 'hello there']);
    expect(await runAms(env, 'dm', 'no-such-agent-abc', 'x')).toEqual({ code: 1, stdout: '', stderr: 'ams: agent "no-such-agent-abc" not found\n' });
    expect(await runAms(env, 'dm', alice.name, 'x')).toEqual({ code: 1, stdout: '', stderr: 'ams: AGENT must not be the caller: a direct room is with another agent\n' });
  });
});
