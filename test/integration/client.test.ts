import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AmsClient, AmsError, type Message } from '@agent-messaging/client';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { untilPast, waitUntil } from '../helpers/wait.js';

// The client library (docs/client.md) against the real server in this process. The restart and
// SIGKILL cases are in client-restart.test.ts.

const clients: AmsClient[] = [];
function clientOf(url: string, agent: TestAgent, options: { lastSeqs?: Record<string, number> } = {}): AmsClient {
  const client = new AmsClient({ url, apiToken: agent.apiToken, ...options });
  clients.push(client);
  return client;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

/** Every message the client delivers, per room, checking the order as they come. */
function collect(client: AmsClient): Map<string, Message[]> {
  const seen = new Map<string, Message[]>();
  client.on('message', (m) => {
    const list = seen.get(m.roomId) ?? [];
    expect(m.seq, `room ${m.roomId}`).toBe((list.at(-1)?.seq ?? m.seq - 1) + 1);
    list.push(m);
    seen.set(m.roomId, list);
  });
  return seen;
}
const idsOf = (messages: { id: string }[] | undefined): string[] => (messages ?? []).map((m) => m.id);

describe('AmsClient', () => {
  const t = useTestServer();

  it('delivers every message of its rooms once, in seq order, its own included; send resolves to the stored message', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice, bob]);
    const before = await sendMessage(t.api, bob, room.id, 'before alice connects');

    const client = clientOf(t.server.url, alice);
    const seen = collect(client);
    await client.connect();
    expect(client.lastSeqs()).toEqual({ [room.id]: before.seq }); // starts at lastSeq: old history is not replayed

    const mine = await client.send(room.id, 'hello from alice', { mentions: [bob.id] });
    expect(mine).toMatchObject({ roomId: room.id, senderId: alice.id, body: 'hello from alice', mentions: [bob.id], seq: before.seq + 1 });
    expect(mine.clientMsgId).toEqual(expect.any(String));
    const theirs = [];
    for (let i = 0; i < 5; i++) theirs.push(await sendMessage(t.api, bob, room.id, `bob ${i}`));
    await waitUntil('all delivered', () => (seen.get(room.id)?.length ?? 0) === 6);
    expect(idsOf(seen.get(room.id))).toEqual([mine.id, ...theirs.map((m) => m.id)]);
    expect(seen.get(room.id)![1]).toMatchObject({ senderId: bob.id, body: 'bob 0' }); // the REST Message shape
    expect(client.lastSeqs()).toEqual({ [room.id]: before.seq + 6 });

    // The same clientMsgId again: the original, not a second message.
    expect((await client.send(room.id, 'hello from alice', { mentions: [bob.id], clientMsgId: mine.clientMsgId })).id).toBe(mine.id);
  });

  it('resumes from a saved lastSeqs: exactly the messages sent while it was away, then live ones', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const rooms = [await newRoom(t.api, admin, [alice]), await newRoom(t.api, admin, [alice])];
    const first = clientOf(t.server.url, alice);
    await first.connect();
    await sendMessage(t.api, admin, rooms[0]!.id, 'seen by the first client');
    await waitUntil('first delivered', () => first.lastSeqs()[rooms[0]!.id] === 1);
    const saved = first.lastSeqs();
    await first.close();

    const missed = new Map<string, string[]>(rooms.map((r) => [r.id, []]));
    for (let i = 0; i < 120; i++) {
      const room = rooms[i % 2]!;
      missed.get(room.id)!.push((await sendMessage(t.api, admin, room.id, `while away ${i}`)).id);
    }
    const second = clientOf(t.server.url, alice, { lastSeqs: saved });
    const seen = collect(second);
    await second.connect(); // resolves once caught up (more than one room:sync page per room)
    for (const room of rooms) expect(idsOf(seen.get(room.id))).toEqual(missed.get(room.id));
    const live = await sendMessage(t.api, admin, rooms[1]!.id, 'live');
    await waitUntil('live delivered', () => seen.get(rooms[1]!.id)?.at(-1)?.id === live.id);
    expect(second.lastSeqs()).toEqual({ [rooms[0]!.id]: 61, [rooms[1]!.id]: 61 });
  });

  it('catches up after the server drops the connection (transport closed, or a server disconnect), missing nothing', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const client = clientOf(t.server.url, alice);
    const seen = collect(client);
    const connects: number[] = [];
    client.on('connect', () => connects.push(Date.now()));
    await client.connect();
    const sent: string[] = [];
    const sendSome = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) sent.push((await sendMessage(t.api, admin, room.id, `m ${sent.length}`)).id);
    };
    await sendSome(3);
    for (const drop of [
      () => { for (const s of t.server.app.realtime.namespace.sockets.values()) s.conn.close(); },
      () => t.server.app.realtime.namespace.disconnectSockets(true),
    ]) {
      const count = connects.length;
      drop();
      await sendSome(4); // while it is away
      await waitUntil('reconnected', () => connects.length > count);
      await sendSome(2);
    }
    await waitUntil('everything delivered', () => (seen.get(room.id)?.length ?? 0) === sent.length);
    expect(idsOf(seen.get(room.id))).toEqual(sent);
  });

  it('a room it is added to while connected is delivered from its first message after the add; presence:update is exposed', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [bob]);
    await sendMessage(t.api, bob, room.id, 'before alice was added');
    const client = clientOf(t.server.url, alice);
    const seen = collect(client);
    const presence: unknown[] = [];
    client.on('presence:update', (p) => presence.push(p));
    await client.connect();
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: alice.id })).status).toBe(201);
    await waitUntil('alice online in the room', () => presence.some((p) => (p as { agentId: string }).agentId === alice.id));
    const after = await sendMessage(t.api, bob, room.id, 'after');
    await waitUntil('delivered', () => (seen.get(room.id)?.length ?? 0) === 1);
    expect(idsOf(seen.get(room.id))).toEqual([after.id]);
    expect(await client.members(room.id)).toContainEqual(expect.objectContaining({ agentId: alice.id, online: true }));
  });

  it('rejects every failure with AmsError carrying status (HTTP) and code', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const client = clientOf(t.server.url, alice);
    await client.connect();

    const failure = async (promise: Promise<unknown>): Promise<AmsError> => {
      const err: unknown = await promise.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(AmsError);
      return err as AmsError;
    };
    expect(await failure(client.send(room.id, ''))).toMatchObject({ status: 400, code: 'VALIDATION_ERROR', details: { body: expect.any(String) } });
    expect(await failure(client.send('01900000-0000-7000-8000-000000000000', 'x'))).toMatchObject({ status: 404, code: 'ROOM_NOT_FOUND' });
    expect(await failure(client.revokeToken('agt_000000000000'))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await failure(client.createAgent({ name: admin.name, displayName: 'x', role: 'agent' }))).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(await failure(client.request('room:sync', { roomId: room.id, afterSeq: -1 }))).toMatchObject({ status: undefined, code: 'VALIDATION_ERROR' });
    expect(await failure(client.request('room:join', { roomId: '01900000-0000-7000-8000-000000000000' }))).toMatchObject({ code: 'ROOM_NOT_FOUND' });

    const refused = new AmsClient({ url: t.server.url, apiToken: 'agt_000000000000_' + '0'.repeat(64) });
    expect(await failure(refused.connect())).toMatchObject({ status: 401, code: 'AUTH_FAILED' });
    await refused.close();
    const unreachable = new AmsClient({ url: 'http://127.0.0.1:9', apiToken: alice.apiToken });
    expect(await failure(unreachable.connect())).toMatchObject({ status: undefined, code: 'NETWORK_ERROR' });
    const timedOut = await failure(unreachable.send(room.id, 'x', { timeoutMs: 300 }));
    expect(timedOut.code).toBe('TIMEOUT');
    await unreachable.close();
    expect(await failure(unreachable.send(room.id, 'x'))).toMatchObject({ code: 'CLOSED' });
    expect(await failure(unreachable.rooms())).toMatchObject({ code: 'CLOSED' });
    // close() while a send keeps trying a service that drops every connection (seen trying twice:
    // it has been through its retry wait), and while connect() waits: both end with CLOSED.
    const tries: Socket[] = [];
    const dropping = createServer((socket) => {
      tries.push(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    try {
      const closing = new AmsClient({ url: `http://127.0.0.1:${(dropping.address() as AddressInfo).port}`, apiToken: alice.apiToken });
      const waiting = failure(closing.send(room.id, 'x'));
      await waitUntil('the send tried twice', () => tries.length >= 2);
      await closing.close();
      expect(await waiting).toMatchObject({ code: 'CLOSED' });
    } finally {
      await new Promise((resolve) => dropping.close(resolve));
    }
    const slow = new AmsClient({ url: t.server.url, apiToken: alice.apiToken });
    const connecting = failure(slow.connect());
    await slow.close();
    expect((await connecting).code).toBe('CLOSED');
  });

  it('typed methods reach every endpoint: rooms, members, history, markRead, inbox, search, agents, tokens, directory, feed', async () => {
    const admin = await newAdmin(t.api);
    const client = clientOf(t.server.url, admin);
    const agent = await client.createAgent({ name: `c-${Date.now().toString(36)}`, displayName: 'C', role: 'agent' });
    const token = await client.issueToken(agent.id);
    const other = new AmsClient({ url: t.server.url, apiToken: token.token });
    clients.push(other);
    const room = await client.createRoom({ slug: `c-${Date.now().toString(36)}`, name: 'C' });
    expect(await client.addMember(room.id, agent.id)).toMatchObject({ roomId: room.id, agentId: agent.id });
    expect((await client.members(room.id)).map((m) => m.agentId).sort()).toEqual([admin.id, agent.id].sort());
    const sent = await other.send(room.id, 'findable words here');
    expect((await client.history(room.id)).messages.map((m) => m.id)).toEqual([sent.id]);
    expect(await client.history(room.id, { afterSeq: 0 })).toMatchObject({ lastSeq: 1, hasMore: false });
    expect((await client.inbox()).messages.map((m) => m.id)).toEqual([sent.id]);
    expect(await client.markRead(room.id, 1)).toEqual({ roomId: room.id, readSeq: 1, unreadCount: 0 });
    expect((await client.search('findable', { roomId: room.id })).results.map((m) => m.id)).toEqual([sent.id]);
    expect((await client.rooms()).map((r) => r.id)).toContain(room.id);
    expect((await client.agents()).map((a) => a.id)).toContain(agent.id);
    expect((await client.directory()).agents.map((a) => a.id)).toContain(agent.id);
    expect((await client.disableAgent(agent.id)).disabledAt).not.toBeNull();
    expect((await client.enableAgent(agent.id)).disabledAt).toBeNull();
    await client.removeMember(room.id, agent.id);
    await client.revokeToken(token.prefix);
    expect((await client.createSession()).token).toEqual(expect.any(String));

    const channel = await client.createChannel({ slug: `c-${Date.now().toString(36)}`, name: 'C' });
    expect((await client.channels()).map((c) => c.id)).toContain(channel.id);
    const post = await client.post(channel.id, 'a post');
    const reply = await client.reply(post.id, 'a reply');
    expect((await client.thread(post.id)).replies.map((r) => r.id)).toEqual([reply.id]);
    expect((await client.react(post.id, '👍')).action).toBe('added');
    expect((await client.reactions(post.id)).reactions).toContainEqual(expect.objectContaining({ emoji: '👍', count: 1 }));
    expect((await client.feed({ channelId: channel.id })).posts.map((p) => p.id)).toEqual([post.id]);
    expect((await client.feed()).posts.map((p) => p.id)).toContain(post.id);
  });

  it('send and history take a room slug as the CLI and MCP do; an unknown slug is ROOM_NOT_FOUND', async () => {
    const admin = await newAdmin(t.api);
    const client = clientOf(t.server.url, admin);
    const slug = `s-${Date.now().toString(36)}`;
    const room = await client.createRoom({ slug, name: 'S' });
    const sent = await client.send(slug, 'by slug');
    expect(sent.roomId).toBe(room.id);
    expect((await client.history(slug)).messages.map((m) => m.id)).toEqual([sent.id]);
    expect(await client.history(slug, { afterSeq: 0 })).toMatchObject({ lastSeq: 1 });
    const unknown = await client.send('no-such-room', 'x').then(() => null, (err: unknown) => err);
    expect(unknown).toBeInstanceOf(AmsError);
    expect((unknown as AmsError).code).toBe('ROOM_NOT_FOUND');
  });
  it('takes an agent by its id or its name wherever it takes an agent, as dm, MCP and ams do; an unknown name is NOT_FOUND', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const bob = await newAgent(t.api);
    const client = clientOf(t.server.url, admin);
    const room = await client.createRoom({ slug: `n-${Date.now().toString(36)}`, name: 'N', members: [alice.name] });
    expect((await client.members(room.id)).map((m) => m.agentId).sort()).toEqual([admin.id, alice.id].sort());
    expect(await client.addMember(room.id, bob.name)).toMatchObject({ roomId: room.id, agentId: bob.id });
    expect((await client.send(room.id, 'hello', { mentions: [alice.name, bob.id] })).mentions).toEqual([alice.id, bob.id]);
    const task = await clientOf(t.server.url, alice).createTask({ assignee: bob.name, title: 'by name', room: room.slug });
    expect(task).toMatchObject({ assigneeId: bob.id, requesterId: alice.id, roomId: room.id });
    await client.removeMember(room.id, bob.name);
    expect((await client.members(room.id)).map((m) => m.agentId)).not.toContain(bob.id);

    expect((await client.openDirectRoom(bob.name)).kind).toBe('direct');
    expect((await client.updateAgent(alice.name, { description: 'named' })).description).toBe('named');
    const token = await client.issueToken(alice.name);
    expect((await client.tokens(alice.name)).map((tk) => tk.prefix)).toContain(token.prefix);
    expect((await client.disableAgent(bob.name)).id).toBe(bob.id);
    expect((await client.enableAgent(bob.name)).disabledAt).toBeNull();
    expect(await client.webhooks(alice.name)).toEqual([]);
    const audit = await client.audit({ actorId: admin.name, limit: 5 });
    expect(audit.records.length).toBeGreaterThan(0);
    expect(new Set(audit.records.map((r) => r.actorId))).toEqual(new Set([admin.id]));

    const unknown = await client.createTask({ assignee: 'no-such-agent-name', title: 'x' }).then(() => null, (err: unknown) => err);
    expect(unknown).toBeInstanceOf(AmsError);
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', status: 404, message: 'agent "no-such-agent-name" not found' });
    await expect(client.addMember(room.id, 'no-such-agent-name')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('AmsClient webhook methods', () => {
  // Nothing listens on the endpoint's port: deliveries only pile up as attempts, which is all this needs.
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [3600], allowPrivateTargets: true } } });

  it('register, list, read the deliveries log and delete an endpoint; refusals are AmsErrors', async () => {
    const admin = await newAdmin(t.api);
    const client = clientOf(t.server.url, admin);
    const created = await client.createWebhook(admin.id, { url: 'http://127.0.0.1:9/hook', mode: 'always' });
    expect(created).toMatchObject({ agentId: admin.id, url: 'http://127.0.0.1:9/hook', mode: 'always', events: ['message.created'], secret: expect.stringMatching(/^whsec_/) });
    expect(await client.webhooks(admin.id)).toEqual([expect.objectContaining({ id: created.id, url: created.url })]);
    expect((await client.webhooks(admin.id))[0]).not.toHaveProperty('secret');
    expect(await client.webhookDeliveries(admin.id, created.id, { limit: 5 })).toEqual([]);
    await expect(client.createWebhook(admin.id, { url: 'ftp://example.com/hook' })).rejects.toMatchObject({ name: 'AmsError', status: 400, code: 'VALIDATION_ERROR' });
    await client.deleteWebhook(admin.id, created.id);
    await expect(client.deleteWebhook(admin.id, created.id)).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await client.webhooks(admin.id)).toEqual([]);
  });
});

describe('AmsClient JWT renewal (JWT_TTL_SECONDS=3)', () => {
  const t = useTestServer({ config: { jwtTtlSeconds: 3 } });

  it('renews the JWT before exp for REST and reconnects with the fresh one', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const client = clientOf(t.server.url, alice);
    const seen = collect(client);
    await client.connect();
    const firstJwt = await client.jwt();
    const expOf = (jwt: string): number => (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp;

    // Well past the first JWT's exp: REST keeps working, with a JWT renewed before each exp. Each
    // round sends, then waits for the next renewal (the timer's, before exp).
    const sent: string[] = [];
    let current = firstJwt;
    for (let round = 0; round < 3; round++) {
      sent.push((await client.send(room.id, `tick ${round}`)).id);
      await waitUntil(`renewal ${round + 1}`, async () => (await client.jwt()) !== current, 10_000);
      current = await client.jwt();
      expect(expOf(current) * 1000).toBeGreaterThan(Date.now());
    }
    await untilPast(expOf(firstJwt) * 1000);
    sent.push((await client.send(room.id, 'past the first exp')).id);
    expect(expOf(await client.jwt())).toBeGreaterThan(expOf(firstJwt));

    // A reconnection now presents the renewed JWT (the first one would be refused).
    const reconnected = new Promise<void>((resolve) => client.on('connect', () => resolve()));
    t.server.app.realtime.namespace.disconnectSockets(true);
    await reconnected;
    // The admin's own JWT expired long ago: it sends through a client of its own.
    sent.push((await clientOf(t.server.url, admin).send(room.id, 'after the reconnect')).id);
    await waitUntil('everything delivered', () => (seen.get(room.id)?.length ?? 0) === sent.length);
    expect(idsOf(seen.get(room.id))).toEqual(sent);
  }, 30_000);
});
