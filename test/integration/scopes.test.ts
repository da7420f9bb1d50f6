import { createHmac, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SCOPE_ACTIONS, type ScopeAction } from '../../src/core/principal.js';
import { bootstrapAdmin, newAdmin, newAgent, newRoom, scopedSession, sendMessage, type Api, type ApiResponse, type TestAgent } from '../helpers/api.js';
import { callTool, connectMcp, type ToolOutcome } from '../helpers/mcp.js';
import { TEST_JWT_SECRET } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { connect, connectReady, emitWithAck, expectAuthFailed, type Payload } from '../helpers/ws.js';

/**
 * Scoped tokens (docs/scopes.md): issue validation, the `scp` claim, and every action on every
 * transport. The matrix is a table of transports, each a table of operations naming the action
 * they need: another transport (MCP) is one more row.
 */

const claimsOf = (jwt: string): Record<string, unknown> => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));

/** What the world looks like to the operations: made once per server by an unscoped admin. */
interface Fixture {
  api: Api;
  url: string;
  admin: TestAgent;
  roomId: string;
  /** A message of another member in roomId. */
  messageId: string;
  channelId: string;
  postId: string;
}

/** 'ok', `scope:<action>` for a refusal naming the missing action, or `error:<status or code>`. */
type Outcome = string;

interface Operation {
  action: ScopeAction;
  run(jwt: string, f: Fixture): Promise<Outcome>;
}

interface Transport {
  name: string;
  operations: Record<string, Operation>;
}

const restOutcome = (res: ApiResponse): Outcome => {
  if (res.status < 300) return 'ok';
  const scope = (res.body as { details?: { scope?: string } }).details?.scope;
  if (res.status === 403 && scope !== undefined) return `scope:${scope.replace(/ required$/, '')}`;
  return `error:${res.status} ${JSON.stringify(res.body)}`;
};

const rest = (action: ScopeAction, method: 'GET' | 'POST', path: (f: Fixture) => string, body?: (f: Fixture) => unknown): Operation => ({
  action,
  run: async (jwt, f) => restOutcome(await f.api.request(method, path(f), { jwt, ...(body ? { body: body(f) } : {}) })),
});

/** The agent a session JWT names (its payload's `agentId`). */
const agentOf = (jwt: string): string => (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { agentId: string }).agentId;

const wsOutcome = (ack: Payload): Outcome => {
  const error = (ack as { error?: { code: string; message: string } } | undefined)?.error;
  if (error === undefined) return 'ok';
  const scope = /: scope (\S+) required$/.exec(error.message);
  if (error.code === 'FORBIDDEN' && scope) return `scope:${scope[1]}`;
  return `error:${error.code} ${error.message}`;
};

const ws = (action: ScopeAction, event: string, payload: (f: Fixture) => unknown): Operation => ({
  action,
  async run(jwt, f) {
    const { socket } = await connectReady(f.url, jwt);
    try {
      return wsOutcome(await emitWithAck(socket, event, payload(f)));
    } finally {
      socket.disconnect();
    }
  },
});

/** An MCP refusal is an isError result `FORBIDDEN: ...` whose structured error names the action. */
const mcpOutcome = (result: ToolOutcome): Outcome => {
  if (!result.isError) return 'ok';
  const scope = (result.data as { error?: { details?: { scope?: string } } } | undefined)?.error?.details?.scope;
  if (result.text.startsWith('FORBIDDEN: ') && scope !== undefined) return `scope:${scope.replace(/ required$/, '')}`;
  return `error:${result.text}`;
};

const mcp = (action: ScopeAction, tool: string, args: (f: Fixture) => Record<string, unknown> = () => ({})): Operation => ({
  action,
  async run(jwt, f) {
    const client = await connectMcp(f.url, jwt);
    try {
      return mcpOutcome(await callTool(client, tool, args(f)));
    } finally {
      await client.close();
    }
  },
});

/** A message of the fixture's admin (sent with its unscoped JWT), for an edit or a deletion to act on. */
const ownMessage = async (f: Fixture): Promise<string> => (await sendMessage(f.api, f.admin, f.roomId, 'mine to change')).id;

const mcpOutcomeOf = async (jwt: string, f: Fixture, tool: string, args: Record<string, unknown>): Promise<Outcome> => {
  const client = await connectMcp(f.url, jwt);
  try {
    return mcpOutcome(await callTool(client, tool, args));
  } finally {
    await client.close();
  }
};

const uniqueSlug = (): string => `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

const TRANSPORTS: Transport[] = [
  {
    name: 'REST',
    operations: {
      'GET history': rest('messages:read', 'GET', (f) => `/api/v1/rooms/${f.roomId}/messages`),
      'GET history ?before=': rest('messages:read', 'GET', (f) => `/api/v1/rooms/${f.roomId}/messages?before=${f.messageId}`),
      'GET ?afterSeq=': rest('messages:read', 'GET', (f) => `/api/v1/rooms/${f.roomId}/messages?afterSeq=0`),
      'GET message thread': rest('messages:read', 'GET', (f) => `/api/v1/rooms/${f.roomId}/messages/${f.messageId}/thread`),
      'GET message acks': rest('messages:read', 'GET', (f) => `/api/v1/rooms/${f.roomId}/messages/${f.messageId}/acks`),
      'GET inbox': rest('messages:read', 'GET', () => '/api/v1/inbox'),
      'GET search': rest('messages:read', 'GET', () => '/api/v1/search/messages?q=hello'),
      'POST read cursor': rest('messages:read', 'POST', (f) => `/api/v1/rooms/${f.roomId}/read`, () => ({ seq: 1 })),
      'POST message': rest('messages:write', 'POST', (f) => `/api/v1/rooms/${f.roomId}/messages`, () => ({ body: 'hello from a scoped token' })),
      // The admin's own message, made for the call (edits and deletions are its sender's).
      'PATCH message': { action: 'messages:write', run: async (jwt, f) => restOutcome(await f.api.request('PATCH', `/api/v1/rooms/${f.roomId}/messages/${await ownMessage(f)}`, { jwt, body: { body: 'edited' } })) },
      'DELETE message': { action: 'messages:write', run: async (jwt, f) => restOutcome(await f.api.request('DELETE', `/api/v1/rooms/${f.roomId}/messages/${await ownMessage(f)}`, { jwt })) },
      'GET /rooms': rest('rooms:read', 'GET', () => '/rooms'),
      'GET /api/v1/rooms': rest('rooms:read', 'GET', () => '/api/v1/rooms'),
      'GET /api/v1/rooms/:id/members': rest('rooms:read', 'GET', (f) => `/api/v1/rooms/${f.roomId}/members`),
      'GET own webhooks': { action: 'webhooks:manage', run: async (jwt, f) => restOutcome(await f.api.request('GET', `/api/v1/agents/${agentOf(jwt)}/webhooks`, { jwt })) },
      'GET channels': rest('feed:read', 'GET', () => '/api/v1/social/channels'),
      'GET feed': rest('feed:read', 'GET', () => '/api/v1/social/feed'),
      'GET channel posts': rest('feed:read', 'GET', (f) => `/api/v1/social/channels/${f.channelId}/posts`),
      'GET thread': rest('feed:read', 'GET', (f) => `/api/v1/social/posts/${f.postId}/thread`),
      'GET reactions': rest('feed:read', 'GET', (f) => `/api/v1/social/posts/${f.postId}/reactions`),
      'POST post': rest('feed:write', 'POST', (f) => `/api/v1/social/channels/${f.channelId}/posts`, () => ({ body: 'a post' })),
      'POST reply': rest('feed:write', 'POST', (f) => `/api/v1/social/posts/${f.postId}/replies`, () => ({ body: 'a reply' })),
      'POST reaction': rest('feed:write', 'POST', (f) => `/api/v1/social/posts/${f.postId}/reactions`, () => ({ emoji: '👍' })),
      'GET directory': rest('directory:read', 'GET', () => '/api/companies/default/agents/directory'),
      'POST agent': rest('admin', 'POST', () => '/api/v1/agents', () => ({ name: uniqueSlug(), displayName: 'x', role: 'agent' })),
      'GET agents': rest('admin', 'GET', () => '/api/v1/agents'),
      'POST token': rest('admin', 'POST', (f) => `/api/v1/agents/${f.admin.id}/tokens`, () => ({ scopes: { actions: ['admin'] } })), // no wider than the caller's (docs/scopes.md)
      'POST room': rest('admin', 'POST', () => '/rooms', () => ({ slug: uniqueSlug(), name: 'scoped room' })),
      'POST channel': rest('admin', 'POST', () => '/api/v1/social/channels', () => ({ slug: uniqueSlug(), name: 'scoped channel' })),
      'GET audit': rest('admin', 'GET', () => '/api/v1/audit?limit=1'),
    },
  },
  {
    name: 'WebSocket',
    operations: {
      'message:history': ws('messages:read', 'message:history', (f) => ({ roomId: f.roomId })),
      'room:sync': ws('messages:read', 'room:sync', (f) => ({ roomId: f.roomId, afterSeq: 0 })),
      'room:read': ws('messages:read', 'room:read', (f) => ({ roomId: f.roomId, seq: 1 })),
      'message:thread': ws('messages:read', 'message:thread', (f) => ({ roomId: f.roomId, messageId: f.messageId })),
      'message:send': ws('messages:write', 'message:send', (f) => ({ roomId: f.roomId, body: 'hello over ws' })),
      'room:list': ws('rooms:read', 'room:list', () => ({})),
      'room:join': ws('rooms:read', 'room:join', (f) => ({ roomId: f.roomId })),
      'room:leave': ws('rooms:read', 'room:leave', (f) => ({ roomId: f.roomId })),
    },
  },
  {
    // whoami needs no action (as opening a session needs none): tested on its own below.
    name: 'MCP',
    operations: {
      list_rooms: mcp('rooms:read', 'list_rooms'),
      read_messages: mcp('messages:read', 'read_messages', (f) => ({ room: f.roomId })),
      'read_messages afterSeq': mcp('messages:read', 'read_messages', (f) => ({ room: f.roomId, afterSeq: 0 })),
      read_replies: mcp('messages:read', 'read_replies', (f) => ({ room: f.roomId, messageId: f.messageId })),
      fetch_inbox: mcp('messages:read', 'fetch_inbox'),
      mark_read: mcp('messages:read', 'mark_read', (f) => ({ room: f.roomId, seq: 1 })),
      search_messages: mcp('messages:read', 'search_messages', () => ({ query: 'hello' })),
      send_message: mcp('messages:write', 'send_message', (f) => ({ room: f.roomId, body: 'hello over mcp' })),
      edit_message: { action: 'messages:write', run: async (jwt, f) => mcpOutcomeOf(jwt, f, 'edit_message', { room: f.roomId, messageId: await ownMessage(f), body: 'edited over mcp' }) },
      delete_message: { action: 'messages:write', run: async (jwt, f) => mcpOutcomeOf(jwt, f, 'delete_message', { room: f.roomId, messageId: await ownMessage(f) }) },
      list_agents: mcp('directory:read', 'list_agents'),
      read_feed: mcp('feed:read', 'read_feed', (f) => ({ channel: f.channelId })),
      read_thread: mcp('feed:read', 'read_thread', (f) => ({ postId: f.postId })),
      create_post: mcp('feed:write', 'create_post', (f) => ({ channel: f.channelId, body: 'a post over mcp' })),
      reply_to_post: mcp('feed:write', 'reply_to_post', (f) => ({ postId: f.postId, body: 'a reply over mcp' })),
      react_to_post: mcp('feed:write', 'react_to_post', (f) => ({ postId: f.postId, emoji: '👍' })),
      read_audit: mcp('admin', 'read_audit', () => ({ limit: 1 })),
    },
  },
];

/** The fixture, made as a strict-mode server requires (by an admin JWT), so that both modes share it. */
async function makeFixture(api: Api, url: string, rootJwt: string): Promise<Fixture> {
  const admin = await newAgent(api, { role: 'admin', asJwt: rootJwt });
  const other = await newAgent(api, { asJwt: rootJwt });
  const room = await api.post('/rooms', { slug: uniqueSlug(), name: 'room', members: [other.id] }, { jwt: admin.jwt });
  const message = await sendMessage(api, other, room.body.id, 'hello there');
  const channel = await api.post('/api/v1/social/channels', { slug: uniqueSlug(), name: 'news' }, { jwt: admin.jwt });
  const post = await api.post(`/api/v1/social/channels/${channel.body.id}/posts`, { body: 'first post' }, { jwt: admin.jwt });
  expect([room.status, channel.status, post.status]).toEqual([201, 201, 201]);
  return { api, url, admin, roomId: room.body.id, messageId: message.id, channelId: channel.body.id, postId: post.body.id };
}

describe.each(['open', 'strict'] as const)('scoped tokens: every action on every transport (%s mode)', (mode) => {
  const t = useTestServer({ config: { authzMode: mode } });
  let f: Fixture;
  /** Sessions of the fixture's admin: every action but one, and that one only. */
  const withoutAction = new Map<ScopeAction, string>();
  const onlyAction = new Map<ScopeAction, string>();

  beforeAll(async () => {
    const root = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    f = await makeFixture(t.api, t.server.url, root.jwt);
    for (const action of SCOPE_ACTIONS) {
      withoutAction.set(action, await scopedSession(t.api, f.admin, { actions: SCOPE_ACTIONS.filter((a) => a !== action) }, f.admin.jwt));
      onlyAction.set(action, await scopedSession(t.api, f.admin, { actions: [action] }, f.admin.jwt));
    }
  });

  const cases = TRANSPORTS.flatMap((transport) => Object.entries(transport.operations).map(([name, op]) => ({ transport: transport.name, name, op })));

  it.each(cases)('$transport $name: refused without its action, allowed with it alone', async ({ op }) => {
    expect(await op.run(withoutAction.get(op.action)!, f)).toBe(`scope:${op.action}`);
    expect(await op.run(onlyAction.get(op.action)!, f)).toBe('ok');
  });

  it.each(cases)('$transport $name: an unscoped token is unchanged, actions: [] allows nothing', async ({ op }) => {
    expect(await op.run(f.admin.jwt, f)).toBe('ok');
    const none = await scopedSession(t.api, f.admin, { actions: [] }, f.admin.jwt);
    expect(await op.run(none, f)).toBe(`scope:${op.action}`);
  });

  it('MCP whoami needs no action: answered with actions: []', async () => {
    const client = await connectMcp(f.url, await scopedSession(t.api, f.admin, { actions: [] }, f.admin.jwt));
    try {
      expect(await callTool(client, 'whoami')).toMatchObject({ isError: false, data: { agentId: f.admin.id, role: 'admin' } });
    } finally {
      await client.close();
    }
  });
});

describe('scoped tokens: issue and session', () => {
  const t = useTestServer({ config: { jwtSecret: TEST_JWT_SECRET } });
  let agent: TestAgent;
  let roomId: string;

  beforeAll(async () => {
    const admin = await newAdmin(t.api);
    agent = await newAgent(t.api);
    roomId = (await newRoom(t.api, admin, [agent])).id;
  });

  const issue = (scopes: unknown) => t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes });

  it('refuses an unknown action, or actions that are not an array, under details["scopes.actions"]', async () => {
    for (const actions of [['messages:read', 'messages:delete'], 'messages:read', [42], { read: true }, null]) {
      const res = await issue({ actions });
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual({ 'scopes.actions': expect.any(String) });
    }
    expect((await issue({ actions: ['nope'] })).body.details['scopes.actions']).toMatch(/"nope"/);
  });

  it('refuses room ids that are not UUIDs, under details["scopes.rooms"]', async () => {
    for (const rooms of [['not-a-uuid'], roomId, [roomId, 7], null]) {
      const res = await issue({ rooms });
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual({ 'scopes.rooms': expect.any(String) });
    }
    const both = await issue({ actions: ['x'], rooms: ['y'] });
    expect(Object.keys(both.body.details).sort()).toEqual(['scopes.actions', 'scopes.rooms']);
  });

  it('stores and returns the scopes as given, other keys included, and carries actions and rooms in the claim scp', async () => {
    const scopes = { actions: ['messages:read', 'rooms:read'], rooms: [roomId.toUpperCase()], note: { any: 'thing' } };
    const res = await issue(scopes);
    expect(res.status).toBe(201);
    expect(res.body.scopes).toEqual(scopes);
    const session = await t.api.exchange(res.body.token);
    expect(session.status).toBe(201);
    expect(claimsOf(session.body.token).scp).toEqual({ actions: scopes.actions, rooms: scopes.rooms });
    // Upper-case room ids reach the room all the same.
    expect((await t.api.get(`/api/v1/rooms/${roomId}/messages`, { jwt: session.body.token })).status).toBe(200);
  });

  it('an unscoped token (no actions, no rooms) gives a JWT without scp and every right of the role', async () => {
    const jwt = await scopedSession(t.api, agent, { note: 'only other keys' });
    expect(claimsOf(jwt)).not.toHaveProperty('scp');
    expect(claimsOf(agent.jwt)).not.toHaveProperty('scp');
    expect((await t.api.post(`/api/v1/rooms/${roomId}/messages`, { body: 'unscoped' }, { jwt })).status).toBe(201);
    expect((await t.api.get('/api/companies/default/agents/directory', { jwt })).status).toBe(200);
  });

  it('rooms alone keeps every action, within those rooms', async () => {
    const jwt = await scopedSession(t.api, agent, { rooms: [roomId] });
    expect(claimsOf(jwt).scp).toEqual({ rooms: [roomId] });
    expect((await t.api.post(`/api/v1/rooms/${roomId}/messages`, { body: 'in scope' }, { jwt })).status).toBe(201);
    expect((await t.api.get('/api/v1/social/feed', { jwt })).status).toBe(200);
  });

  it('POST /api/v1/sessions and connecting a socket need no action', async () => {
    const res = await issue({ actions: [] });
    expect((await t.api.exchange(res.body.token)).status).toBe(201);
    const { socket, hello } = await connectReady(t.server.url, (await t.api.exchange(res.body.token)).body.token);
    expect(hello.rooms).toEqual([]);
    socket.disconnect();
  });

  it('the 403 names the missing action in details.scope', async () => {
    const jwt = await scopedSession(t.api, agent, { actions: ['messages:read'] });
    const res = await t.api.post(`/api/v1/rooms/${roomId}/messages`, { body: 'no' }, { jwt });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), details: { scope: 'messages:write required' } });
  });

  it('the largest scope a token may hold (4 KiB of JSON: 100 rooms) works over REST and the WebSocket', async () => {
    const rooms = [roomId, ...Array.from({ length: 99 }, () => randomUUID())];
    const jwt = await scopedSession(t.api, agent, { rooms });
    expect(Buffer.byteLength(JSON.stringify({ rooms }))).toBeLessThanOrEqual(4096);
    expect((await t.api.get('/api/v1/rooms', { jwt })).body.rooms.map((r: Payload) => r.id)).toEqual([roomId]);
    const { socket, hello } = await connectReady(t.server.url, jwt);
    expect(hello.rooms).toEqual([roomId]);
    socket.disconnect();
  });

  it('the OpenAPI document describes scopes.actions and rooms, and the 403 of every JWT route', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    const issue = doc.paths['/api/v1/agents/{id}/tokens'].post;
    const body = JSON.stringify(issue.requestBody);
    for (const action of SCOPE_ACTIONS) expect(body).toContain(`"${action}"`);
    expect(body).toContain('"rooms"');
    expect(doc.paths['/api/v1/inbox'].get.responses['403']).toBeDefined();
    expect(doc.paths['/api/v1/rooms/{id}/messages'].post.responses['403']).toBeDefined();
  });

  it('refuses (401, AUTH_FAILED) a signed JWT whose scp is malformed', async () => {
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: object): string => {
      const b64 = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url');
      const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
      return `${unsigned}.${createHmac('sha256', TEST_JWT_SECRET).update(unsigned).digest('base64url')}`;
    };
    const base = { agentId: agent.id, role: 'agent', iat: now, exp: now + 600 };
    // The well-formed one is accepted, so the refusals below are about scp alone.
    expect((await t.api.get('/api/v1/inbox', { jwt: sign({ ...base, scp: { actions: ['messages:read'] } }) })).status).toBe(200);
    for (const scp of ['all', [], { actions: ['everything'] }, { actions: 'messages:read' }, { rooms: ['nope'] }, { actions: [], extra: 1 }, null]) {
      const jwt = sign({ ...base, scp });
      expect((await t.api.get('/api/v1/inbox', { jwt })).status).toBe(401);
      await expectAuthFailed(connect(t.server.url, jwt));
    }
  });
});
