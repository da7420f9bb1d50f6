import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_EVENTS } from '../../src/core/audit/audit.store.js';
import { bootstrapAdmin, newAdmin, newAgent, newRoom, scopedSession, sendMessage, type Api, type TestAgent } from '../helpers/api.js';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { approve, MemoryOAuthProvider } from '../helpers/oauth.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/protocol.md, Audit log: GET /api/v1/audit on the suite's engine (AMS_TEST_DATABASE).

interface Record_ { id: string; event: string; actorId: string | null; subjectId: string | null; detail: Record<string, unknown>; createdAt: string }

const read = (api: Api, jwt: string | undefined, query = '') => api.get(`/api/v1/audit${query}`, jwt === undefined ? {} : { jwt });

/** Every record, page after page (100 a page), checking the cursor of each page on the way. */
async function readAll(api: Api, jwt: string, filter = ''): Promise<Record_[]> {
  const records: Record_[] = [];
  let before = '';
  for (;;) {
    const res = await read(api, jwt, `?limit=100${filter}${before === '' ? '' : `&before=${before}`}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const page = res.body as { records: Record_[]; nextCursor: string | null; hasMore: boolean };
    records.push(...page.records);
    if (!page.hasMore) {
      expect(page.nextCursor).toBeNull();
      return records;
    }
    expect(page.nextCursor).toBe(page.records.at(-1)!.id);
    before = page.nextCursor!;
  }
}

/** Newest first: by createdAt, then id. */
function expectNewestFirst(records: Record_[]): void {
  const sorted = [...records].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1));
  expect(records.map((r) => r.id)).toEqual(sorted.map((r) => r.id));
}

describe('the audit log, readable (open mode)', () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [], allowPrivateTargets: true } } });

  it('every event the service writes appears, about the right subject, and no record holds a credential or secret', async () => {
    const secrets: string[] = [];
    const keep = (agent: TestAgent): TestAgent => {
      secrets.push(agent.apiToken, agent.apiToken.split('_')[2]!, agent.jwt);
      return agent;
    };
    const admin = keep(await newAdmin(t.api)); // agent-created, token-issued, jwt-issued
    const alice = keep(await newAgent(t.api));
    const bob = keep(await newAgent(t.api));
    const as = (agent: TestAgent) => ({ jwt: agent.jwt });
    const expected: [string, string, string | null][] = [['agent-created', alice.id, null], ['agent-created', bob.id, null]];

    const issued = await t.api.post(`/api/v1/agents/${bob.id}/tokens`, {}, as(admin));
    expect(issued.status).toBe(201);
    secrets.push(issued.body.token, issued.body.token.split('_')[2]);
    const session = await t.api.exchange(issued.body.token);
    expect(session.status).toBe(201);
    secrets.push(session.body.token);
    expect((await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`, as(admin))).status).toBe(204);
    expected.push(['token-issued', issued.body.id, admin.id], ['jwt-issued', bob.id, bob.id], ['token-revoked', issued.body.id, admin.id]);

    expect((await t.api.request('PATCH', `/api/v1/agents/${alice.id}`, { body: { description: 'audited' }, jwt: alice.jwt })).status).toBe(200);
    expected.push(['agent-updated', alice.id, alice.id]);
    expect((await t.api.post(`/api/v1/agents/${bob.id}/disable`, {}, as(admin))).status).toBe(200);
    expect((await t.api.post(`/api/v1/agents/${bob.id}/enable`, {}, as(admin))).status).toBe(200);
    expected.push(['agent-disabled', bob.id, admin.id], ['agent-enabled', bob.id, admin.id]);

    const room = await newRoom(t.api, admin, [alice]);
    expect((await t.api.post(`/rooms/${room.id}/members`, { agentId: bob.id }, as(admin))).status).toBe(201);
    expect((await t.api.delete(`/rooms/${room.id}/members/${bob.id}`, as(admin))).status).toBe(204);
    expected.push(['room-created', room.id, admin.id], ['member-added', room.id, admin.id], ['member-removed', room.id, admin.id]);
    expect((await t.api.request('PATCH', `/api/v1/rooms/${room.id}`, { body: { retentionDays: 30 }, jwt: admin.jwt })).status).toBe(200);
    expect((await fetch(`${t.server.url}/api/v1/rooms/${room.id}/export`, { headers: { authorization: `Bearer ${admin.jwt}` } })).status).toBe(200);
    expected.push(['room-updated', room.id, admin.id], ['room-exported', room.id, admin.id]);
    const lease = await t.api.post(`/api/v1/rooms/${room.id}/leases`, { resource: 'src/' }, { jwt: alice.jwt });
    expect(lease.status).toBe(201);
    expect((await t.api.delete(`/api/v1/rooms/${room.id}/leases/${lease.body.id as string}`, { jwt: alice.jwt })).status).toBe(204);
    expected.push(['lease-granted', lease.body.id as string, alice.id], ['lease-released', lease.body.id as string, alice.id]);

    const sent = await sendMessage(t.api, alice, room.id, 'to be edited');
    expect((await t.api.request('PATCH', `/api/v1/rooms/${room.id}/messages/${sent.id}`, { body: { body: 'edited' }, jwt: alice.jwt })).status).toBe(200);
    expect((await t.api.delete(`/api/v1/rooms/${room.id}/messages/${sent.id}`, as(alice))).status).toBe(204);
    expected.push(['message-sent', sent.id, alice.id], ['message-edited', sent.id, alice.id], ['message-deleted', sent.id, alice.id]);

    const direct = await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, as(alice));
    expect(direct.status).toBe(201);
    expected.push(['room-created', direct.body.id, alice.id]);

    const channel = await t.api.post('/api/v1/social/channels', { slug: `audit-${Date.now().toString(36)}`, name: 'Audit' }, as(admin));
    expect(channel.status).toBe(201);
    const post = await t.api.post(`/api/v1/social/channels/${channel.body.id}/posts`, { body: 'a post' }, as(alice));
    const reply = await t.api.post(`/api/v1/social/posts/${post.body.id}/replies`, { body: 'a reply' }, as(bob));
    expect((await t.api.post(`/api/v1/social/posts/${post.body.id}/reactions`, { emoji: '👍' }, as(bob))).status).toBe(200);
    expected.push(['channel-created', channel.body.id, admin.id], ['post-created', post.body.id, alice.id], ['reply-created', reply.body.id, bob.id], ['reaction-toggled', post.body.id, bob.id]);

    const webhook = await t.api.post(`/api/v1/agents/${alice.id}/webhooks`, { url: 'http://127.0.0.1:9/hook' }, as(alice));
    expect(webhook.status).toBe(201);
    secrets.push(webhook.body.secret, webhook.body.secret.slice('whsec_'.length));
    expect((await t.api.delete(`/api/v1/agents/${alice.id}/webhooks/${webhook.body.id}`, as(alice))).status).toBe(204);
    expected.push(['webhook-created', webhook.body.id, alice.id], ['webhook-deleted', webhook.body.id, alice.id]);

    const uploaded = await fetch(`${t.server.url}/api/v1/files?name=audit.txt`, { method: 'POST', headers: { authorization: `Bearer ${alice.jwt}`, 'content-type': 'text/plain' }, body: 'audited bytes' });
    expect(uploaded.status).toBe(201);
    expected.push(['file-uploaded', ((await uploaded.json()) as { id: string }).id, alice.id]);

    const task = await t.api.post('/api/v1/tasks', { assignee: bob.id, title: 'audited task' }, as(alice));
    expect(task.status).toBe(201);
    expect((await t.api.post(`/api/v1/tasks/${task.body.id}/state`, { state: 'working' }, as(bob))).status).toBe(200);
    expected.push(['task-created', task.body.id, alice.id], ['task-updated', task.body.id, bob.id]);

    // OAuth (docs/oauth.md): a client registers, a person allows it as bob, the grant is revoked.
    const oauthClient = new MemoryOAuthProvider('http://127.0.0.1:8976/callback', 'Audited client');
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', t.server.url), { authProvider: oauthClient });
    await expect(new Client({ name: 'audit', version: '1' }).connect(transport)).rejects.toThrow();
    const { callback } = await approve(oauthClient.authorizationUrl!, bob.apiToken);
    await transport.finishAuth(callback.searchParams.get('code')!);
    secrets.push(oauthClient.saved!.access_token, oauthClient.saved!.refresh_token!, callback.searchParams.get('code')!);
    const grant = (await t.api.get(`/api/v1/agents/${bob.id}/tokens?kind=oauth`, as(bob))).body.tokens[0];
    expect((await t.api.delete(`/api/v1/agents/${bob.id}/tokens/${grant.id}`, as(bob))).status).toBe(204);
    expected.push(['oauth-client-registered', grant.clientId, null], ['oauth-grant-created', grant.id, bob.id], ['oauth-grant-revoked', grant.id, bob.id]);

    await waitUntil('the registration is recorded', async () => (await read(t.api, admin.jwt, `?event=oauth-client-registered&subjectId=${grant.clientId}`)).body.records.length === 1);
    const records = await readAll(t.api, admin.jwt);
    expectNewestFirst(records);
    expect(new Set(records.map((r) => r.event))).toEqual(new Set(AUDIT_EVENTS));
    for (const [event, subjectId, actorId] of expected) {
      const match = records.find((r) => r.event === event && r.subjectId === subjectId);
      expect(match, `${event} about ${subjectId}`).toBeDefined();
      if (actorId !== null) expect(match!.actorId, `${event} by`).toBe(actorId);
    }
    // Every record's shape, and a record of each kind as the filters find it.
    for (const record of records) {
      expect(record).toEqual({ id: expect.any(String), event: expect.any(String), actorId: record.actorId === null ? null : expect.any(String), subjectId: expect.any(String), detail: expect.any(Object), createdAt: expect.any(String) });
      expect(new Date(record.createdAt).toISOString()).toBe(record.createdAt);
    }
    const jwtSecret = t.server.app.ctx.config.jwtSecret
      ?? (await t.server.app.ctx.database.db.selectFrom('service_settings').select('value').where('key', '=', 'jwt_secret').executeTakeFirstOrThrow()).value;
    secrets.push(jwtSecret);
    const text = JSON.stringify(records);
    for (const secret of secrets) expect(text.includes(secret), `a record holds a secret (${secret.slice(0, 8)}…)`).toBe(false);
    expect(text).not.toContain('$argon2id$');
  });

  it('pages newest first with nextCursor and before, and filters by event, actor and subject (AND)', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await sendMessage(t.api, alice, room.id, `message ${i}`));

    const mine = await read(t.api, admin.jwt, `?event=message-sent&actorId=${alice.id}&limit=2`);
    expect(mine.status).toBe(200);
    expect(mine.body.records.map((r: Record_) => r.subjectId)).toEqual([sent[4]!.id, sent[3]!.id]);
    expect(mine.body).toMatchObject({ hasMore: true, nextCursor: mine.body.records[1].id });
    const next = await read(t.api, admin.jwt, `?event=message-sent&actorId=${alice.id}&limit=2&before=${mine.body.nextCursor}`);
    expect(next.body.records.map((r: Record_) => r.subjectId)).toEqual([sent[2]!.id, sent[1]!.id]);
    const last = await read(t.api, admin.jwt, `?event=message-sent&actorId=${alice.id}&limit=2&before=${next.body.nextCursor}`);
    expect(last.body).toEqual({ records: [expect.objectContaining({ subjectId: sent[0]!.id, actorId: alice.id, event: 'message-sent', detail: { roomId: room.id } })], nextCursor: null, hasMore: false });

    const everyOfAlice = await readAll(t.api, admin.jwt, `&actorId=${alice.id.toUpperCase()}`);
    expect(everyOfAlice.map((r) => r.event)).toEqual([...Array(5).fill('message-sent'), 'jwt-issued']);
    expect((await readAll(t.api, admin.jwt, `&subjectId=${room.id}`)).map((r) => r.event)).toEqual(['room-created']);
    expect(await readAll(t.api, admin.jwt, `&subjectId=${room.id}&event=message-sent`)).toEqual([]);
    expect(await readAll(t.api, admin.jwt, '&event=no-such-event')).toEqual([]);

    // The default page is 50; empty parameters are absent ones.
    const page = await read(t.api, admin.jwt, '?event=&actorId=&subjectId=&before=');
    expect(page.status).toBe(200);
    expect(page.body.records.length).toBeLessThanOrEqual(50);
    expectNewestFirst(page.body.records);
  });

  it('400 for a bad limit, event or UUID and for a before that names no record; 401 without a JWT; 403 for others', async () => {
    const admin = await newAdmin(t.api);
    const agent = await newAgent(t.api);
    for (const [query, field] of [
      ['?limit=0', 'limit'], ['?limit=101', 'limit'], ['?limit=x', 'limit'], ['?limit=1.5', 'limit'],
      ['?event=Room%20created', 'event'], [`?event=${'a'.repeat(65)}`, 'event'],
      ['?actorId=nope', 'actorId'], ['?subjectId=1234', 'subjectId'], ['?before=x', 'before'],
      [`?before=${randomUUID()}`, 'before'], [`?before=${agent.id}`, 'before'],
    ] as const) {
      const res = await read(t.api, admin.jwt, query);
      expect(res.status, query).toBe(400);
      expect(Object.keys(res.body.details), query).toEqual([field]);
    }
    expect((await read(t.api, undefined)).status).toBe(401);
    expect((await read(t.api, agent.jwt)).status).toBe(403);
    // A scoped token needs the admin action, in both modes.
    const withoutAdmin = await scopedSession(t.api, admin, { actions: ['messages:read'] }, admin.jwt);
    expect(await read(t.api, withoutAdmin)).toMatchObject({ status: 403, body: { details: { scope: 'admin required' } } });
    const withAdmin = await scopedSession(t.api, admin, { actions: ['admin'] }, admin.jwt);
    expect((await read(t.api, withAdmin, '?limit=1')).status).toBe(200);
  });

  it('MCP read_audit: the same page for an admin, with names in its text; FORBIDDEN for others; bad arguments named', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const sent = await sendMessage(t.api, alice, room.id, 'audited over mcp');
    const client = await connectMcp(t.server.url, admin.jwt);
    const other = await connectMcp(t.server.url, alice.jwt);
    try {
      const rest = await read(t.api, admin.jwt, `?actorId=${alice.id}&limit=1`);
      const tool = await callTool(client, 'read_audit', { actorId: alice.id, limit: 1 });
      expect(tool.isError).toBe(false);
      expect(tool.data).toEqual(rest.body);
      expect(tool.data.records).toEqual([expect.objectContaining({ event: 'message-sent', subjectId: sent.id })]);
      expect(tool.text).toContain(`message-sent by ${alice.name}, about ${sent.id}`);
      expect(tool.text).toContain(`before "${tool.data.nextCursor as string}"`);
      const next = await callTool(client, 'read_audit', { actorId: alice.id, before: tool.data.nextCursor });
      expect(next.data.records.map((r: Record_) => r.event)).toEqual(['jwt-issued']);
      expect(next.data).toMatchObject({ hasMore: false, nextCursor: null });
      expect((await callTool(client, 'read_audit', { event: 'room-created', subjectId: room.id })).data.records).toHaveLength(1);
      expect((await callTool(client, 'read_audit', { before: randomUUID() })).text).toMatch(/^VALIDATION_ERROR: .*before/);
      expect((await callTool(client, 'read_audit', { subjectId: 'nope' })).text).toMatch(/^VALIDATION_ERROR: .*subjectId/);
      expect((await callTool(client, 'read_audit', { limit: 101 })).text).toMatch(/^VALIDATION_ERROR: .*limit/);
      expect((await callTool(other, 'read_audit', {})).text).toMatch(/^FORBIDDEN: /);
    } finally {
      await client.close();
      await other.close();
    }
  });
});

describe('the audit log, readable (strict mode)', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });

  it('an admin JWT reads it; another agent gets 403, no JWT 401', async () => {
    const admin = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    const agent = await newAgent(t.api, { asJwt: admin.jwt });
    const res = await read(t.api, admin.jwt, `?subjectId=${agent.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      records: [
        expect.objectContaining({ event: 'jwt-issued', actorId: agent.id, subjectId: agent.id }),
        expect.objectContaining({ event: 'agent-created', actorId: admin.id, subjectId: agent.id }),
      ],
      nextCursor: null, hasMore: false,
    });
    expect((await read(t.api, agent.jwt)).status).toBe(403);
    expect((await read(t.api, undefined)).status).toBe(401);
  });
});

describe('ams audit', { timeout: 120_000 }, () => {
  const t = useTestServer();
  beforeAll(ensureBuilt, 180_000);

  it('a table newest first with names for agents, filters, --json, --before; exit 1 for an agent, 2 for a bad --limit', async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const sent = await sendMessage(t.api, alice, room.id, 'audited from the command line');
    const ams = (token: string, ...args: string[]) => runAms({ AMS_URL: t.server.url, AMS_API_TOKEN: token }, ...args);

    const table = await ams(admin.apiToken, 'audit', '--actor', alice.name, '--limit', '1');
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TIME\s+EVENT\s+ACTOR\s+SUBJECT\s+DETAIL$/);
    expect(lines[1]).toMatch(new RegExp(`^\\S+\\s+message-sent\\s+${alice.name}\\s+${sent.id}\\s+\\{"roomId":"${room.id}"\\}$`));
    const more = /^more: --before (\S+)$/.exec(lines[2]!);
    expect(more).not.toBeNull();
    const older = await ams(admin.apiToken, 'audit', '--actor', alice.id, '--before', more![1]!);
    expect(older.stdout).toMatch(new RegExp(`jwt-issued\\s+${alice.name}\\s+${alice.name}\\s`));
    expect(older.stdout).not.toContain('more:');

    const json = await ams(admin.apiToken, 'audit', '--subject', room.id, '--event', 'room-created', '--json');
    expect(JSON.parse(json.stdout)).toEqual((await read(t.api, admin.jwt, `?subjectId=${room.id}&event=room-created`)).body);
    expect((await ams(admin.apiToken, 'audit', '--event', 'no-such-event')).stdout).toBe('no records\n');

    expect(await ams(alice.apiToken, 'audit')).toMatchObject({ code: 1, stdout: '', stderr: 'ams: Admin role required\n' });
    expect(await ams(admin.apiToken, 'audit', '--limit', 'x')).toMatchObject({ code: 2, stderr: expect.stringContaining('--limit must be a whole number') });
    expect(await ams(admin.apiToken, 'audit', '--before', 'nope')).toMatchObject({ code: 1, stderr: 'ams: --before must be a UUID\n' });
  });
});
