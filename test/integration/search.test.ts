import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, bootstrapAdmin, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom, uniqueName } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';

// GET /api/v1/search/messages (docs/search.md) on the suite's engine (AMS_TEST_DATABASE).

interface Item {
  id: string;
  roomId: string;
  body: string;
}

describe('message search', () => {
  let server: TestServer;
  let api: Api;
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let outsider: TestAgent;
  let shared: TestRoom;
  let secret: TestRoom;
  const sent: Record<string, string> = {};

  const search = (agent: TestAgent, query: Record<string, string>) =>
    api.get(`/api/v1/search/messages?${new URLSearchParams(query).toString()}`, { jwt: agent.jwt });
  const bodies = (res: { body: { results: Item[] } }): string[] => res.body.results.map((m) => m.body);

  beforeAll(async () => {
    server = await startTestServer();
    api = new Api(server.url);
    admin = await newAdmin(api);
    alice = await newAgent(api);
    bob = await newAgent(api);
    outsider = await newAgent(api);
    shared = await newRoom(api, admin, [alice, bob]);
    secret = await newRoom(api, admin, [bob]);
    const corpus: [TestAgent, TestRoom, string, string][] = [
      [alice, shared, 'deploy', 'Deploy the café build tonight'],
      [bob, shared, 'deployment', 'The deployment of v2.0 failed'],
      [alice, shared, 'email', 'Write to user@example.com about it'],
      [bob, secret, 'secret', 'Secret deploy plan for the CAFE'],
      [alice, shared, 'ops', 'AND OR NOT NEAR are just words here'],
      [bob, shared, 'phrase', 'build the release notes, then release the build'],
    ];
    for (const [agent, room, key, body] of corpus) sent[key] = (await sendMessage(api, agent, room.id, body)).id;
  });
  afterAll(() => server?.close());

  it('finds whole words, ignoring case and diacritics, newest first, with REST message items', async () => {
    const res = await search(alice, { q: 'DEPLOY' });
    expect(res.status).toBe(200);
    expect(bodies(res)).toEqual(['Deploy the café build tonight']);
    expect(res.body.hasMore).toBe(false);
    expect(res.body.nextCursor).toBe(sent.deploy);
    // The item is the REST message, exactly as history gives it.
    const history = await api.get(`/api/v1/rooms/${shared.id}/messages?limit=100`, { jwt: alice.jwt });
    expect(res.body.results[0]).toEqual(history.body.messages.find((m: Item) => m.id === sent.deploy));

    expect(bodies(await search(alice, { q: 'cafe' }))).toEqual(['Deploy the café build tonight']);
    expect(bodies(await search(bob, { q: 'CAFÉ' }))).toEqual(['Secret deploy plan for the CAFE', 'Deploy the café build tonight']);
    expect(bodies(await search(alice, { q: 'deploy*' }))).toEqual(['The deployment of v2.0 failed', 'Deploy the café build tonight']);
  });

  it('cuts words at every character that is not a letter or a digit', async () => {
    expect(bodies(await search(alice, { q: 'example' }))).toEqual(['Write to user@example.com about it']);
    expect(bodies(await search(alice, { q: 'user@example.com' }))).toEqual(['Write to user@example.com about it']);
    expect(bodies(await search(alice, { q: 'com user' }))).toEqual(['Write to user@example.com about it']);
    expect(bodies(await search(alice, { q: 'v2' }))).toEqual(['The deployment of v2.0 failed']);
    expect(bodies(await search(alice, { q: 'v2.0' }))).toEqual(['The deployment of v2.0 failed']);
    expect(bodies(await search(alice, { q: 'v20' }))).toEqual([]);
  });

  it('matches phrases, excludes, and requires every word', async () => {
    expect(bodies(await search(alice, { q: '"release the build"' }))).toEqual(['build the release notes, then release the build']);
    expect(bodies(await search(alice, { q: '"the build release"' }))).toEqual([]);
    expect(bodies(await search(alice, { q: 'build -release' }))).toEqual(['Deploy the café build tonight']);
    expect(bodies(await search(alice, { q: 'build -"release notes"' }))).toEqual(['Deploy the café build tonight']);
    expect(bodies(await search(alice, { q: 'build -rel*' }))).toEqual(['Deploy the café build tonight']);
    expect(bodies(await search(alice, { q: 'build tonight' }))).toEqual(['Deploy the café build tonight']);
    expect(bodies(await search(alice, { q: 'build failed' }))).toEqual([]);
  });

  it('treats operator words and syntax of the engines as ordinary text', async () => {
    expect(bodies(await search(alice, { q: 'NOT NEAR' }))).toEqual(['AND OR NOT NEAR are just words here']);
    expect(bodies(await search(alice, { q: 'deploy OR build' }))).toEqual([]);
    for (const q of ['"unbalanced', 'build"', 'a:b', '(build', 'build)', '^build', "build'; drop table messages; --", 'NEAR(build tonight)', 'build AND', '{build}', '"" build', 'build --', 'col:build*']) {
      const res = await search(alice, { q });
      expect(res.status, q).toBe(200);
    }
    expect(bodies(await search(alice, { q: '"unbalanced quote runs to the end' }))).toEqual([]);
    expect(bodies(await search(alice, { q: '(tonight)' }))).toEqual(['Deploy the café build tonight']);
  });

  it('answers 400 with details.q for a query without a word to find', async () => {
    for (const q of ['', '*', '"', '-deploy', '-"release notes"', '!!! ??? ...', ' ', 'x'.repeat(257)]) {
      const res = await search(alice, { q });
      expect(res.status, q).toBe(400);
      expect(typeof res.body.details.q, q).toBe('string');
    }
    expect((await api.get('/api/v1/search/messages', { jwt: alice.jwt })).body.details.q).toBe('is required');
    expect((await search(alice, { q: 'a\u0000b' })).status).toBe(400);
    expect((await search(alice, { q: 'x'.repeat(256) })).status).toBe(200);
  });

  it('covers only the rooms the caller is a member of; an admin sees every room', async () => {
    expect(bodies(await search(alice, { q: 'secret' }))).toEqual([]);
    expect(bodies(await search(outsider, { q: 'deploy' }))).toEqual([]);
    expect(bodies(await search(bob, { q: 'secret' }))).toEqual(['Secret deploy plan for the CAFE']);
    expect(bodies(await search(admin, { q: 'deploy' }))).toEqual(['Secret deploy plan for the CAFE', 'Deploy the café build tonight']);

    expect(bodies(await search(bob, { q: 'deploy', roomId: shared.id }))).toEqual(['Deploy the café build tonight']);
    expect(bodies(await search(admin, { q: 'deploy', roomId: secret.id }))).toEqual(['Secret deploy plan for the CAFE']);
    expect((await search(alice, { q: 'deploy', roomId: secret.id })).status).toBe(403);
    expect((await search(alice, { q: 'deploy', roomId: '0190a000-0000-7000-8000-000000000000' })).status).toBe(404);
    const bad = await search(alice, { q: 'deploy', roomId: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body.details.roomId).toBeDefined();
    // A cursor from a room the caller cannot read is refused like an unknown one.
    const foreign = await search(alice, { q: 'deploy', before: sent.secret! });
    expect(foreign.status).toBe(400);
    expect(foreign.body.details.before).toBeDefined();
  });

  it('needs a session JWT', async () => {
    expect((await api.get('/api/v1/search/messages?q=deploy')).status).toBe(401);
  });

  it('pages newest first with before (exclusive), limit, nextCursor and hasMore', async () => {
    const room = await newRoom(api, admin, [alice]);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await sendMessage(api, alice, room.id, `paging item ${i}`)).id);
    const newestFirst = [...ids].reverse();

    const first = await search(alice, { q: 'paging', roomId: room.id, limit: '2' });
    expect(first.body.results.map((m: Item) => m.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.body).toMatchObject({ hasMore: true, nextCursor: newestFirst[1] });
    const second = await search(alice, { q: 'paging', roomId: room.id, limit: '2', before: first.body.nextCursor });
    expect(second.body.results.map((m: Item) => m.id)).toEqual(newestFirst.slice(2, 4));
    const last = await search(alice, { q: 'paging', limit: '2', before: second.body.nextCursor });
    expect(last.body.results.map((m: Item) => m.id)).toEqual(newestFirst.slice(4));
    expect(last.body).toMatchObject({ hasMore: false, nextCursor: newestFirst[4] });
    const empty = await search(alice, { q: 'paging', before: newestFirst[4]! });
    expect(empty.body).toEqual({ results: [], nextCursor: null, hasMore: false });

    expect((await search(alice, { q: 'paging' })).body.results).toHaveLength(5);
    for (const limit of ['0', '101', 'x', '1.5']) expect((await search(alice, { q: 'paging', limit })).body.details.limit, limit).toBeDefined();
    expect((await search(alice, { q: 'paging', before: 'x' })).body.details.before).toBeDefined();
    expect((await search(alice, { q: 'paging', before: '0190a000-0000-7000-8000-000000000000' })).status).toBe(400);
    // A cursor of another room than roomId.
    expect((await search(alice, { q: 'paging', roomId: room.id, before: sent.deploy! })).status).toBe(400);
  });

  it('finds a message as soon as its send is acknowledged, under concurrent sends', async () => {
    const room = await newRoom(api, admin, [alice, bob]);
    await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const agent = i % 2 === 0 ? alice : bob;
      const { id } = await sendMessage(api, agent, room.id, `fresh-${i} tokenfresh${i}`);
      const found = await search(agent, { q: `tokenfresh${i}` });
      expect(found.body.results.map((m: Item) => m.id)).toEqual([id]);
    }));
  });

  it('indexes the messages that exist when the migration runs', async () => {
    const db = await newRoom(api, admin, [alice]);
    const { id } = await sendMessage(api, alice, db.id, 'Préexistant message before indexing');
    // Undo migration 005 and those after it (migrations run in order), then start a server on the
    // same database: they run again and 005 backfills the index.
    const kysely = server.app.ctx.database.db;
    for (const table of ['oauth_grants', 'oauth_records']) await sql`drop table ${sql.raw(table)}`.execute(kysely); // 021 (its indexes go with them)
    for (const table of ['leases', 'lease_rooms']) await sql`drop table ${sql.raw(table)}`.execute(kysely); // 019 (its task columns go with tasks below)
    await sql`drop table message_acks`.execute(kysely); // 018 (its index goes with it)
    for (const column of ['importance', 'ack_required', 'ack_count']) await sql`alter table messages drop column ${sql.raw(column)}`.execute(kysely);
    await sql`drop table message_search`.execute(kysely);
    await sql`drop index webhook_deliveries_message_idx`.execute(kysely); // 020
    await sql`drop index message_attention_room_seq_idx`.execute(kysely);
    for (const column of ['retention_days', 'legal_hold']) await sql`alter table rooms drop column ${sql.raw(column)}`.execute(kysely);
    await sql`drop index messages_open_streams_idx`.execute(kysely); // 017
    for (const column of ['stream_state', 'stream_active_at', 'stream_via']) await sql`alter table messages drop column ${sql.raw(column)}`.execute(kysely);
    await sql`drop table file_usage`.execute(kysely); // 016
    for (const table of ['message_attachments', 'file_chunks', 'files']) await sql`drop table ${sql.raw(table)}`.execute(kysely); // 012
    await sql`alter table messages drop column data`.execute(kysely);
    await sql`drop table webhook_deliveries`.execute(kysely); // 006
    await sql`drop table webhook_endpoints`.execute(kysely); // 007's index went with its table
    await sql`alter table api_tokens drop column last_used_at`.execute(kysely); // 008
    await sql`drop index rooms_direct_key`.execute(kysely); // 009
    await sql`alter table rooms drop column direct_key`.execute(kysely);
    await sql`alter table rooms drop column kind`.execute(kysely);
    await sql`drop table message_attention`.execute(kysely); // 011
    await sql`drop index messages_thread_seq_idx`.execute(kysely); // 010
    for (const column of ['thread_id', 'reply_count', 'last_reply_at', 'edited_at', 'deleted_at']) await sql`alter table messages drop column ${sql.raw(column)}`.execute(kysely);
    for (const table of ['task_history', 'tasks']) await sql`drop table ${sql.raw(table)}`.execute(kysely); // 013 (its indexes go with them)
    await sql`alter table messages drop column task`.execute(kysely);
    for (const index of ['audit_log_time_idx', 'audit_log_event_time_idx', 'audit_log_actor_time_idx', 'audit_log_subject_time_idx']) await sql`drop index ${sql.raw(index)}`.execute(kysely); // 014
    await sql`create index audit_log_event_idx on audit_log (event, id)`.execute(kysely);
    for (const column of ['description', 'skills']) await sql`alter table agents drop column ${sql.raw(column)}`.execute(kysely); // 015
    await sql`delete from kysely_migration where name >= '005-message-search'`.execute(kysely);
    await server.close({ keepDatabase: true });
    server = await startTestServer({ db: server.db });
    api = new Api(server.url);
    const found = await search(alice, { q: 'preexistant' });
    expect(found.body.results.map((m: Item) => m.id)).toEqual([id]);
    expect(bodies(await search(bob, { q: 'cafe' }))).toEqual(['Secret deploy plan for the CAFE', 'Deploy the café build tonight']);
  });
});

describe('message search in strict mode', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;

  beforeAll(async () => {
    // The first admin comes from outside the API, as `ams admin create` makes it.
    admin = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    alice = await newAgent(t.api, { asJwt: admin.jwt });
    bob = await newAgent(t.api, { asJwt: admin.jwt });
  });

  it('covers the same rooms as in open mode: the member\'s, all for an admin', async () => {
    const room = await t.api.post('/rooms', { slug: uniqueName('room'), name: 'R', members: [alice.id] }, { jwt: admin.jwt });
    expect(room.status).toBe(201);
    const { id } = await sendMessage(t.api, alice, room.body.id, 'strict mode search target');
    const search = (agent: TestAgent, extra = '') => t.api.get(`/api/v1/search/messages?q=strict%20target${extra}`, { jwt: agent.jwt });
    expect((await search(alice)).body.results.map((m: Item) => m.id)).toEqual([id]);
    expect((await search(admin)).body.results.map((m: Item) => m.id)).toEqual([id]);
    expect((await search(bob)).body.results).toEqual([]);
    expect((await search(bob, `&roomId=${room.body.id}`)).status).toBe(403);
  });
});
