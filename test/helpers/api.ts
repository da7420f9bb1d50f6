import type { Kysely } from 'kysely';
import { createAgentsService } from '../../src/core/agents/agents.service.js';
import { createAuthz } from '../../src/core/authz/authz.js';
import { createTokensService } from '../../src/core/auth/tokens.service.js';
import { nullPublisher } from '../../src/core/events.js';
import type { DB } from '../../src/store/schema.js';

/** A small HTTP client and factories that keep integration tests readable. */

export interface ApiResponse<T = any> { // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is, without JSON encoding. */
  rawBody?: string;
  jwt?: string;
  headers?: Record<string, string>;
}

export class Api {
  /** `base` may be a function: the URL of a server started later (useTestServer). */
  constructor(private readonly base: string | (() => string)) {}

  get baseUrl(): string {
    return typeof this.base === 'string' ? this.base : this.base();
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.jwt !== undefined) headers.authorization = `Bearer ${options.jwt}`;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    if (text !== '' && (response.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed };
  }

  get = (path: string, options?: RequestOptions) => this.request('GET', path, options);
  post = (path: string, body?: unknown, options: RequestOptions = {}) => this.request('POST', path, { ...options, body });
  delete = (path: string, options?: RequestOptions) => this.request('DELETE', path, options);
  /** POST /api/v1/sessions with the API token in the Authorization header: the token-for-JWT exchange. */
  exchange = (apiToken: string) => this.post('/api/v1/sessions', undefined, { headers: { authorization: `Bearer ${apiToken}` } });
}

export interface TestAgent {
  id: string;
  name: string;
  role: 'admin' | 'agent';
  apiToken: string;
  prefix: string;
  jwt: string;
}

let counter = 0;
export const uniqueName = (base = 'agent'): string => `${base}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

function expectStatus(res: ApiResponse, status: number, what: string): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
}

/** Creates an agent, issues it an API token and exchanges that for a JWT. */
export async function newAgent(api: Api, options: { role?: 'admin' | 'agent'; name?: string; asJwt?: string } = {}): Promise<TestAgent> {
  const role = options.role ?? 'agent';
  const name = options.name ?? uniqueName(role);
  const auth = options.asJwt !== undefined ? { jwt: options.asJwt } : {};
  const created = await api.post('/api/v1/agents', { name, displayName: `Test ${name}`, role }, auth);
  expectStatus(created, 201, 'create agent');
  const token = await api.post(`/api/v1/agents/${created.body.id}/tokens`, { scopes: {} }, auth);
  expectStatus(token, 201, 'issue token');
  const session = await api.exchange(token.body.token);
  expectStatus(session, 201, 'exchange token');
  return { id: created.body.id, name, role, apiToken: token.body.token, prefix: token.body.prefix, jwt: session.body.token };
}

export const newAdmin = (api: Api, options: { asJwt?: string } = {}) => newAgent(api, { ...options, role: 'admin' });

export interface TestRoom {
  id: string;
  slug: string;
  name: string;
}

/** Creates a room as `admin` (X-Agent-Id) with the given members. */
export async function newRoom(api: Api, admin: TestAgent, members: TestAgent[] = []): Promise<TestRoom> {
  const slug = uniqueName('room');
  const res = await api.post('/rooms', { slug, name: `Room ${slug}`, members: members.map((m) => m.id) }, { headers: { 'x-agent-id': admin.id } });
  expectStatus(res, 201, 'create room');
  return res.body;
}

export async function sendMessage(api: Api, agent: TestAgent, roomId: string, body: string): Promise<{ id: string; createdAt: string; seq: number }> {
  const res = await api.post(`/api/v1/rooms/${roomId}/messages`, { body }, { jwt: agent.jwt });
  expectStatus(res, 201, 'send message');
  return res.body;
}

/**
 * The first admin of a strict-mode server, made as `ams admin create` makes it: straight in the
 * database, then a session through the API.
 */
export async function bootstrapAdmin(db: Kysely<DB>, api: Api): Promise<TestAgent> {
  const authz = createAuthz('open');
  const agent = await createAgentsService({ db, authz }).create(null, { name: uniqueName('root'), displayName: 'Root', role: 'admin' });
  const token = await createTokensService({ db, authz, events: nullPublisher }).issue(null, agent.id, {});
  const session = await api.post('/api/v1/sessions', { apiToken: token.token });
  if (session.status !== 201) throw new Error(`bootstrap session: ${session.status}`);
  return { id: agent.id, name: agent.name, role: 'admin', apiToken: token.token, prefix: token.prefix, jwt: session.body.token };
}

/** The usual cast of a test file: an admin, an agent, and a room of the admin's with the agent in it. */
export async function newAdminAgentRoom(api: Api): Promise<{ admin: TestAgent; agent: TestAgent; roomId: string }> {
  const admin = await newAdmin(api);
  const agent = await newAgent(api);
  return { admin, agent, roomId: (await newRoom(api, admin, [agent])).id };
}

/** The cast of a conversation test: an admin, alice and bob, and a room of the admin's with both in it. */
export async function newAdminPairRoom(api: Api): Promise<{ admin: TestAgent; alice: TestAgent; bob: TestAgent; room: TestRoom }> {
  const admin = await newAdmin(api);
  const [alice, bob] = await Promise.all([newAgent(api), newAgent(api)]);
  return { admin, alice, bob, room: await newRoom(api, admin, [alice, bob]) };
}

/** A session of `agent` from a new token with these scopes (docs/scopes.md), issued as `asJwt` when given. */
export async function scopedSession(api: Api, agent: { id: string }, scopes: Record<string, unknown>, asJwt?: string): Promise<string> {
  const token = await api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes }, asJwt === undefined ? {} : { jwt: asJwt });
  expectStatus(token, 201, 'issue scoped token');
  const session = await api.exchange(token.body.token);
  expectStatus(session, 201, 'exchange scoped token');
  return session.body.token;
}

/** A second API token (and a session from it) for an existing agent. */
export async function anotherSession(api: Api, agent: TestAgent, asJwt?: string): Promise<TestAgent> {
  const issued = await api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: {} }, asJwt === undefined ? {} : { jwt: asJwt });
  if (issued.status !== 201) throw new Error(`issue token: ${issued.status}`);
  const session = await api.post('/api/v1/sessions', { apiToken: issued.body.token });
  if (session.status !== 201) throw new Error(`exchange: ${session.status}`);
  return { ...agent, apiToken: issued.body.token, prefix: issued.body.prefix, jwt: session.body.token };
}
