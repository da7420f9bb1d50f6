import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, newAdmin, newAgent, uniqueName, type Api, type ApiResponse, type RequestOptions, type TestAgent } from '../helpers/api.js';
import { closed } from '../helpers/schema.js';
import { registeredRoutes } from '../helpers/routes.js';
import { useTestServer } from '../helpers/suite.js';

/**
 * docs/protocol.md, The API describes itself: /openapi.json is a valid OpenAPI 3.1 document, it names every route the
 * server registers, and what it says is what the server does: every real response of a scenario
 * that hits each route (successes and errors) has a documented status and matches its schema.
 */

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, unknown>;
interface Operation { operationId: string; responses: Record<string, { content?: Record<string, { schema: Json }> }> }
type OpenApiDocument = { openapi: string; paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Json> } };

/** The schema with each `#/components/schemas/...` reference replaced by the component. */
function resolveRefs(schema: unknown, doc: OpenApiDocument): unknown {
  if (Array.isArray(schema)) return schema.map((s) => resolveRefs(s, doc));
  if (typeof schema !== 'object' || schema === null) return schema;
  const ref = (schema as Json).$ref;
  if (typeof ref === 'string') {
    const target = doc.components?.schemas?.[ref.replace('#/components/schemas/', '')];
    if (!target) throw new Error(`unresolved ${ref}`);
    return resolveRefs(target, doc);
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, resolveRefs(v, doc)]));
}

/** Fastify's `:name` path parameters in OpenAPI's `{name}` form. */
const toOpenApiPath = (path: string): string => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');


/** Routes that are not part of the REST interface the document describes. */
// /mcp is JSON-RPC (MCP), described by its own tools/list (docs/mcp.md), not REST; so is /a2a, the
// Agent2Agent protocol, described by each agent's card (docs/a2a.md).
const UNDOCUMENTED = (route: string): boolean => /^GET \/(metrics|openapi\.json|asyncapi\.json)?$/.test(route) || / \/(docs|console)/.test(route) || / \/mcp$/.test(route) || / \/a2a\//.test(route)
  // OAuth (docs/oauth.md): the authorization server's endpoints and pages, and the discovery documents.
  || / \/(oauth|\.well-known)\//.test(route);

describe('/openapi.json', () => {
  const { server, api } = useTestServer();
  let document: OpenApiDocument;
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  const validators = new Map<Json, ValidateFunction>();
  /** `METHOD /path status` of every checked response. */
  const seen = new Set<string>();

  beforeAll(async () => {
    const res = await api.get('/openapi.json');
    expect(res.status).toBe(200);
    document = res.body as OpenApiDocument;
  });

  /**
   * Sends a request to the route `method path` (path with `:params`, filled from `params`) and
   * checks the answer against the document: its status is documented and its body matches.
   */
  async function call(target: { api: Api; doc: OpenApiDocument }, method: string, path: string, params: Record<string, string>, options: RequestOptions = {}): Promise<ApiResponse> {
    const url = path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? `missing-${name}`));
    const res = await target.api.request(method, url, options);
    const where = `${method} ${path} -> ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
    const route = path.split('?')[0]!;
    const operation = target.doc.paths[toOpenApiPath(route)]?.[method.toLowerCase()];
    if (!operation) throw new Error(`route not in the document: ${where}`);
    const response = operation.responses[String(res.status)];
    if (!response) throw new Error(`status not documented: ${where}`);
    const schema = response.content?.['application/json']?.schema;
    if (schema === undefined) {
      // A binary or streamed response (a file's bytes, a room's export) is documented as such; anything else has no body.
      if (response.content?.['application/octet-stream'] === undefined && response.content?.['application/x-ndjson'] === undefined) expect(res.body, where).toBe('');
    } else {
      let validate = validators.get(schema);
      if (!validate) validators.set(schema, (validate = ajv.compile(closed(resolveRefs(schema, target.doc)) as Json)));
      if (!validate(res.body)) throw new Error(`body does not match the documented schema (${ajv.errorsText(validate.errors)}): ${where}`);
    }
    seen.add(`${method} ${toOpenApiPath(route)} ${res.status}`);
    return res;
  }

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(document as unknown as Json);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('names every route the server registers (and nothing else)', () => {
    const registered = registeredRoutes(server.app.http.printRoutes({ commonPrefix: false })).filter((r) => !UNDOCUMENTED(r));
    const documented = Object.entries(document.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(registered.length).toBeGreaterThanOrEqual(26);
    // The router prints parameters of one position together (`{id}|{roomId}`): compare them unnamed.
    const shape = (route: string): string => toOpenApiPath(route).replace(/\{[^}]*\}(\|\{[^}]*\})*/g, '{}');
    expect(registered.map(shape).sort()).toEqual(documented.map(shape).sort());
  });

  it('documents every route with an operationId, a success and the shared error body', () => {
    const ids = new Set<string>();
    for (const [path, ops] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.operationId, `${method} ${path}`).toBeTruthy();
        expect(ids.has(op.operationId), `duplicate operationId ${op.operationId}`).toBe(false);
        ids.add(op.operationId);
        expect(Object.keys(op.responses).some((s) => s.startsWith('2')), `${method} ${path} success`).toBe(true);
        expect(op.responses['429']?.content?.['application/json']?.schema, `${method} ${path} 429`).toEqual({ $ref: '#/components/schemas/ErrorBody' });
      }
    }
  });

  it('every response of a scenario that hits every route matches the document (open mode)', async () => {
    const t = { api, doc: document };
    const none = {};
    await call(t, 'GET', '/healthz', none);
    await call(t, 'GET', '/readyz', none);

    // Agents and tokens.
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const bob = await newAgent(api);
    const outsider = await newAgent(api);
    const created = await call(t, 'POST', '/api/v1/agents', none, { body: { name: uniqueName('doc'), displayName: 'Doc', role: 'agent' } });
    expect(created.status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/agents', none, { body: { name: created.body.name, displayName: 'Again', role: 'agent' } })).status).toBe(409);
    expect((await call(t, 'POST', '/api/v1/agents', none, { body: { name: 'Bad Name', displayName: '', role: 'boss' } })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/agents', none, { rawBody: '{"name":' })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/agents', none, { rawBody: '<x/>', headers: { 'content-type': 'application/xml' } })).status).toBe(415);
    expect((await call(t, 'POST', '/api/v1/agents', none, { body: { name: 'x'.repeat(20_000) } })).status).toBe(413);
    expect((await call(t, 'GET', '/api/v1/agents', none)).status).toBe(200);

    const agentId = { id: created.body.id as string };
    expect((await call(t, 'POST', '/api/v1/agents/:id/tokens', agentId, { body: { scopes: { note: 'docs' }, expiresAt: '2099-01-01T00:00:00.000Z' } })).status).toBe(201);
    const issued = await call(t, 'POST', '/api/v1/agents/:id/tokens', agentId, { body: {} });
    expect(issued.status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/agents/:id/tokens', { id: '00000000-0000-7000-8000-000000000000' }, { body: {} })).status).toBe(404);
    expect((await call(t, 'POST', '/api/v1/agents/:id/tokens', { id: 'not-a-uuid' }, { body: {} })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/agents/:id/tokens', agentId, { body: { scopes: [] } })).status).toBe(400);

    expect((await call(t, 'POST', '/api/v1/sessions', none, { body: { apiToken: issued.body.token } })).status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/sessions', none, { body: { apiToken: 'agt_000000000000_nope' } })).status).toBe(401);
    expect((await call(t, 'POST', '/api/v1/sessions', none, { body: { apiToken: issued.body.token }, headers: { authorization: `Bearer ${alice.apiToken}` } })).status).toBe(400);

    // Profiles (docs/protocol.md, Agent profiles).
    const profile = { description: 'Reviews patches', skills: [{ id: 'review', name: 'Review a patch', tags: ['code'] }] };
    expect((await call(t, 'PATCH', '/api/v1/agents/:id', { id: alice.id }, { body: profile, jwt: alice.jwt })).body.skills).toEqual([{ ...profile.skills[0], description: '' }]);
    expect((await call(t, 'PATCH', '/api/v1/agents/:id', { id: alice.id }, { body: { description: 'x'.repeat(1001) }, jwt: alice.jwt })).status).toBe(400);
    expect((await call(t, 'PATCH', '/api/v1/agents/:id', { id: alice.id }, { body: profile })).status).toBe(401);
    expect((await call(t, 'PATCH', '/api/v1/agents/:id', { id: alice.id }, { body: profile, jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'PATCH', '/api/v1/agents/:id', { id: '00000000-0000-7000-8000-000000000000' }, { body: profile, jwt: admin.jwt })).status).toBe(404);
    expect((await call(t, 'POST', '/api/v1/agents/:id/disable', agentId)).body.disabledAt).not.toBeNull();
    expect((await call(t, 'POST', '/api/v1/sessions', none, { body: { apiToken: issued.body.token } })).status).toBe(403);
    expect((await call(t, 'POST', '/api/v1/agents/:id/enable', agentId)).body.disabledAt).toBeNull();
    expect((await call(t, 'POST', '/api/v1/agents/:id/disable', { id: '00000000-0000-7000-8000-000000000000' })).status).toBe(404);
    expect((await call(t, 'POST', '/api/v1/agents/:id/enable', { id: 'nope' })).status).toBe(400);

    expect((await call(t, 'DELETE', '/api/v1/tokens/:prefix', { prefix: issued.body.prefix })).status).toBe(204);
    expect((await call(t, 'DELETE', '/api/v1/tokens/:prefix', { prefix: issued.body.prefix })).status).toBe(404);
    expect((await call(t, 'GET', '/api/v1/agents/:id/tokens', agentId, { jwt: admin.jwt })).body.tokens).toHaveLength(2);
    expect((await call(t, 'GET', '/api/v1/agents/:id/tokens', agentId)).status).toBe(401);
    const byId = await call(t, 'POST', '/api/v1/agents/:id/tokens', agentId, { body: {} });
    expect((await call(t, 'DELETE', '/api/v1/agents/:id/tokens/:tokenId', { ...agentId, tokenId: byId.body.id }, { jwt: admin.jwt })).status).toBe(204);
    expect((await call(t, 'DELETE', '/api/v1/agents/:id/tokens/:tokenId', { ...agentId, tokenId: byId.body.id }, { jwt: admin.jwt })).status).toBe(404);

    // Rooms and members.
    const slug = uniqueName('docroom');
    const asAdmin = { 'x-agent-id': admin.id };
    const room = await call(t, 'POST', '/rooms', none, { body: { slug, name: 'Docs', members: [alice.id] }, headers: asAdmin });
    expect(room.status).toBe(201);
    expect((await call(t, 'POST', '/rooms', none, { body: { slug, name: 'Again' }, headers: asAdmin })).status).toBe(409);
    expect((await call(t, 'POST', '/rooms', none, { body: { slug: uniqueName('r'), name: 'R' } })).status).toBe(401);
    expect((await call(t, 'POST', '/rooms', none, { body: { slug: uniqueName('r'), name: 'R' }, headers: { 'x-agent-id': alice.id } })).status).toBe(403);
    expect((await call(t, 'POST', '/rooms', none, { body: { slug: 'Not A Slug', name: '' }, headers: asAdmin })).status).toBe(400);
    expect((await call(t, 'GET', '/rooms', none)).status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/rooms', none, { jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/direct-rooms', none, { body: { agentId: bob.id }, jwt: alice.jwt })).status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/direct-rooms', none, { body: { agentId: alice.id }, jwt: bob.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/direct-rooms', none, { body: { agentId: alice.id }, jwt: alice.jwt })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/direct-rooms', none, { body: { agentId: '00000000-0000-7000-8000-000000000000' }, jwt: alice.jwt })).status).toBe(404);

    // Tasks (docs/tasks.md).
    const task = await call(t, 'POST', '/api/v1/tasks', none, { body: { assignee: bob.id, title: 'Review', clientTaskId: 'doc-1' }, jwt: alice.jwt });
    expect(task.status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/tasks', none, { body: { assignee: bob.id, title: 'Review', clientTaskId: 'doc-1' }, jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/tasks', none, { body: { assignee: 'bob', title: 'Review' }, jwt: alice.jwt })).status).toBe(400);
    const taskId = { id: task.body.id as string };
    expect((await call(t, 'POST', '/api/v1/tasks/:id/state', taskId, { body: { state: 'working' }, jwt: bob.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/tasks/:id/state', taskId, { body: { state: 'rejected' }, jwt: bob.jwt })).status).toBe(409);
    expect((await call(t, 'GET', '/api/v1/tasks/:id', taskId, { jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/tasks/:id', taskId, { jwt: outsider.jwt })).status).toBe(404);
    expect((await call(t, 'GET', '/api/v1/tasks', none, { jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/tasks?as=boss', none, { jwt: alice.jwt })).status).toBe(400);
    // Queues (docs/tasks.md, Queues).
    const queueRoom = await call(t, 'POST', '/rooms', none, { body: { slug: uniqueName('queue'), name: 'Queue', members: [alice.id, bob.id] }, headers: asAdmin });
    const queued = await call(t, 'POST', '/api/v1/tasks', none, { body: { queue: queueRoom.body.id, title: 'Queued' }, jwt: alice.jwt });
    expect(queued.status).toBe(201);
    const queuedId = { id: queued.body.id as string };
    expect((await call(t, 'POST', '/api/v1/tasks/:id/claim', queuedId, { body: { leaseSeconds: 1 }, jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/tasks/:id/claim', queuedId, { body: {}, jwt: bob.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/tasks/:id/claim', queuedId, { body: {}, jwt: outsider.jwt })).status).toBe(404);
    expect((await call(t, 'POST', '/api/v1/tasks/claim', none, { body: { queue: queueRoom.body.id }, jwt: bob.jwt })).status).toBe(204);
    expect((await call(t, 'POST', '/api/v1/tasks/claim', none, { body: {}, jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/tasks/:id/heartbeat', queuedId, { body: { leaseSeconds: 60 }, jwt: bob.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/tasks/:id/heartbeat', queuedId, { body: {}, jwt: alice.jwt })).status).toBe(409);
    expect((await call(t, 'GET', `/api/v1/tasks?queue=${queueRoom.body.id as string}`, none, { jwt: bob.jwt })).status).toBe(200);
    // Leases (docs/leases.md).
    const inQueueRoom = { id: queueRoom.body.id as string };
    const lease = await call(t, 'POST', '/api/v1/rooms/:id/leases', inQueueRoom, { body: { resource: 'docs/', clientLeaseId: 'l-1' }, jwt: alice.jwt });
    expect(lease.status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/leases', inQueueRoom, { body: { resource: 'docs/', clientLeaseId: 'l-1' }, jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/leases', inQueueRoom, { body: { resource: 'docs/a.md' }, jwt: bob.jwt })).status).toBe(409);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/leases', inQueueRoom, { body: { resource: 'a/../b' }, jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/leases', inQueueRoom, { jwt: bob.jwt })).status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/leases', inQueueRoom, { jwt: outsider.jwt })).status).toBe(403);
    const leaseIds = { id: queueRoom.body.id as string, leaseId: lease.body.id as string };
    expect((await call(t, 'POST', '/api/v1/rooms/:id/leases/:leaseId/renew', leaseIds, { body: { ttlSeconds: 60 }, jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/leases/:leaseId/renew', leaseIds, { body: {}, jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'DELETE', '/api/v1/rooms/:id/leases/:leaseId', leaseIds, { jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'DELETE', '/api/v1/rooms/:id/leases/:leaseId', leaseIds, { jwt: alice.jwt })).status).toBe(204);

    const roomId = { id: room.body.id as string };
    expect((await call(t, 'POST', '/rooms/:id/members', roomId, { body: { agentId: bob.id } })).status).toBe(201);
    expect((await call(t, 'POST', '/rooms/:id/members', roomId, { body: { agentId: bob.id } })).status).toBe(409);
    expect((await call(t, 'POST', '/rooms/:id/members', { id: '00000000-0000-7000-8000-000000000000' }, { body: { agentId: bob.id } })).status).toBe(404);
    expect((await call(t, 'POST', '/rooms/:id/members', roomId, { body: { agentId: 'bob' } })).status).toBe(400);

    // Messages.
    const messages = (path = '/api/v1/rooms/:id/messages') => path;
    const sent = await call(t, 'POST', messages(), roomId, { body: { body: 'hello', clientMsgId: 'c-1', mentions: [bob.id] }, jwt: alice.jwt });
    expect(sent.status).toBe(201);
    expect((await call(t, 'POST', messages(), roomId, { body: { body: 'hello', clientMsgId: 'c-1', mentions: [bob.id] }, jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'POST', messages(), roomId, { body: { body: 'other', clientMsgId: 'c-1' }, jwt: alice.jwt })).status).toBe(409);
    expect((await call(t, 'POST', messages(), roomId, { body: { body: 'reply', replyTo: sent.body.id }, jwt: bob.jwt })).status).toBe(201);
    expect((await call(t, 'POST', messages(), roomId, { body: { body: '' }, jwt: alice.jwt })).status).toBe(400);
    expect((await call(t, 'POST', messages(), roomId, { body: { body: 'x' } })).status).toBe(401);
    expect((await call(t, 'POST', messages(), roomId, { body: { body: 'x' }, jwt: outsider.jwt })).status).toBe(403);
    expect((await call(t, 'POST', messages(), { id: '00000000-0000-7000-8000-000000000000' }, { body: { body: 'x' }, jwt: alice.jwt })).status).toBe(404);
    const page = await call(t, 'GET', messages(), roomId, { jwt: alice.jwt });
    expect(page.body.messages.length).toBe(2);
    expect((await call(t, 'GET', `${messages()}?limit=1&before=${sent.body.id as string}`, roomId, { jwt: alice.jwt })).body.nextCursor).toBeNull();
    expect((await call(t, 'GET', `${messages()}?limit=500`, roomId, { jwt: alice.jwt })).status).toBe(400);
    expect((await call(t, 'GET', messages(), roomId)).status).toBe(401);
    expect((await call(t, 'GET', messages(), { id: '00000000-0000-7000-8000-000000000000' }, { jwt: alice.jwt })).status).toBe(404);
    // Threads (docs/threads-and-edits.md).
    const thread = '/api/v1/rooms/:id/messages/:messageId/thread';
    expect((await call(t, 'GET', thread, { ...roomId, messageId: sent.body.id as string }, { jwt: bob.jwt })).body.replies).toHaveLength(1);
    expect((await call(t, 'GET', thread, { ...roomId, messageId: '00000000-0000-7000-8000-000000000000' }, { jwt: bob.jwt })).status).toBe(404);
    // Edits and deletions (docs/threads-and-edits.md).
    const one = '/api/v1/rooms/:id/messages/:messageId';
    const mine = await call(t, 'POST', messages(), roomId, { body: { body: 'to edit' }, jwt: alice.jwt });
    expect((await call(t, 'PATCH', one, { ...roomId, messageId: mine.body.id as string }, { body: { body: 'edited' }, jwt: alice.jwt })).body.editedAt).toEqual(expect.any(String));
    expect((await call(t, 'PATCH', one, { ...roomId, messageId: mine.body.id as string }, { body: { body: 'edited' }, jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'DELETE', one, { ...roomId, messageId: mine.body.id as string }, { jwt: alice.jwt })).status).toBe(204);
    expect((await call(t, 'DELETE', one, { ...roomId, messageId: mine.body.id as string }, { jwt: alice.jwt })).status).toBe(404);
    // Streamed messages (docs/streaming.md).
    const streamed = await call(t, 'POST', messages(), roomId, { body: { body: '', streaming: true }, jwt: alice.jwt });
    const streamedId = { ...roomId, messageId: streamed.body.id as string };
    expect((await call(t, 'POST', `${one}/append`, streamedId, { body: { text: 'grow' }, jwt: alice.jwt })).body).toEqual({ length: 4 });
    expect((await call(t, 'POST', `${one}/append`, streamedId, { body: { text: 'x' }, jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'POST', `${one}/end`, streamedId, { body: {}, jwt: alice.jwt })).body).toMatchObject({ body: 'grow', streaming: false, streamEnd: 'complete' });
    expect((await call(t, 'POST', `${one}/end`, streamedId, { body: {}, jwt: alice.jwt })).status).toBe(409);
    // Acknowledgements (docs/acknowledgements.md).
    const asked = await call(t, 'POST', messages(), roomId, { body: { body: 'confirm', ackRequired: true, mentions: [bob.id], importance: 'high' }, jwt: alice.jwt });
    expect(asked.body).toMatchObject({ importance: 'high', ack: { required: 1, acked: 0 } });
    const ackPath = '/api/v1/rooms/:id/messages/:messageId/ack';
    expect((await call(t, 'POST', ackPath, { ...roomId, messageId: asked.body.id as string }, { body: {}, jwt: bob.jwt })).body.ackedAt).toEqual(expect.any(String));
    expect((await call(t, 'POST', ackPath, { ...roomId, messageId: asked.body.id as string }, { body: {}, jwt: alice.jwt })).status).toBe(409);
    const acksPath = '/api/v1/rooms/:id/messages/:messageId/acks';
    expect((await call(t, 'GET', acksPath, { ...roomId, messageId: asked.body.id as string }, { jwt: alice.jwt })).body.acked).toHaveLength(1);
    expect((await call(t, 'GET', acksPath, { ...roomId, messageId: asked.body.id as string }, { jwt: bob.jwt })).status).toBe(403);
    // Activity (docs/protocol.md, Activity).
    expect((await call(t, 'POST', '/api/v1/rooms/:id/activity', roomId, { body: { state: 'typing' }, jwt: alice.jwt })).status).toBe(204);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/activity', roomId, { body: { state: 'asleep' }, jwt: alice.jwt })).status).toBe(400);
    // Forward catch-up, read cursors, the inbox and search (docs/catch-up.md, docs/search.md).
    expect((await call(t, 'GET', `${messages()}?afterSeq=0`, roomId, { jwt: bob.jwt })).body.lastSeq).toBeGreaterThan(0);
    expect((await call(t, 'GET', `${messages()}?afterSeq=-1`, roomId, { jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'GET', '/api/v1/inbox', none, { jwt: bob.jwt })).body.unreadTotal).toBeGreaterThan(0);
    expect((await call(t, 'GET', '/api/v1/inbox?wait=99', none, { jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'GET', '/api/v1/inbox', none)).status).toBe(401);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/read', roomId, { body: { seq: 1 }, jwt: bob.jwt })).body.readSeq).toBe(1);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/read', roomId, { body: { seq: 1 }, jwt: outsider.jwt })).status).toBe(403);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/read', roomId, { body: { seq: 10_000 }, jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/rooms/:id/read', { id: '00000000-0000-7000-8000-000000000000' }, { body: { seq: 0 }, jwt: bob.jwt })).status).toBe(404);
    expect((await call(t, 'GET', '/api/v1/search/messages?q=hello', none, { jwt: bob.jwt })).body.results.length).toBeGreaterThan(0);
    expect((await call(t, 'GET', '/api/v1/search/messages?q=%2B%2B', none, { jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'GET', `/api/v1/search/messages?q=hello&roomId=${roomId.id}`, none, { jwt: outsider.jwt })).status).toBe(403);
    expect((await call(t, 'GET', '/api/v1/search/messages?q=hello&roomId=00000000-0000-7000-8000-000000000000', none, { jwt: bob.jwt })).status).toBe(404);
    // Webhooks (docs/webhooks.md); a public address literal, never attempted (its agent is in no room).
    const hooked = await newAgent(api);
    const hooks = '/api/v1/agents/:id/webhooks';
    const hookUrl = 'https://198.51.100.7/hook';
    const hook = await call(t, 'POST', hooks, { id: hooked.id }, { body: { url: hookUrl }, jwt: hooked.jwt });
    expect(hook.status).toBe(201);
    expect((await call(t, 'POST', hooks, { id: hooked.id }, { body: { url: 'http://127.0.0.1/' }, jwt: hooked.jwt })).status).toBe(400);
    expect((await call(t, 'POST', hooks, { id: hooked.id }, { body: { url: hookUrl }, jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'POST', hooks, { id: hooked.id }, { body: { url: hookUrl } })).status).toBe(401);
    expect((await call(t, 'GET', hooks, { id: hooked.id }, { jwt: admin.jwt })).body.webhooks).toHaveLength(1);
    expect((await call(t, 'GET', hooks, { id: '00000000-0000-7000-8000-000000000000' }, { jwt: admin.jwt })).status).toBe(404);
    const hookIds = { id: hooked.id, webhookId: hook.body.id as string };
    const unknownHook = { id: hooked.id, webhookId: '00000000-0000-7000-8000-000000000000' };
    expect((await call(t, 'GET', `${hooks}/:webhookId/deliveries`, hookIds, { jwt: hooked.jwt })).body.deliveries).toEqual([]);
    expect((await call(t, 'GET', `${hooks}/:webhookId/deliveries`, unknownHook, { jwt: hooked.jwt })).status).toBe(404);
    expect((await call(t, 'DELETE', `${hooks}/:webhookId`, hookIds, { jwt: hooked.jwt })).status).toBe(204);
    expect((await call(t, 'DELETE', `${hooks}/:webhookId`, hookIds, { jwt: hooked.jwt })).status).toBe(404);
    // Files (docs/files.md): raw bytes up, raw bytes down.
    const text = { 'content-type': 'text/plain' };
    const uploaded = await call(t, 'POST', '/api/v1/files?name=notes.txt', none, { rawBody: 'some notes', headers: text, jwt: alice.jwt });
    expect(uploaded.status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/files?name=a%2Fb', none, { rawBody: 'x', headers: text, jwt: alice.jwt })).status).toBe(400);
    expect((await call(t, 'POST', '/api/v1/files?name=a', none, { rawBody: 'x', headers: text })).status).toBe(401);
    const fileId = { id: uploaded.body.id as string };
    expect((await call(t, 'GET', '/api/v1/files/:id', fileId, { jwt: alice.jwt })).body).toBe('some notes');
    expect((await call(t, 'GET', '/api/v1/files/:id', fileId, { jwt: alice.jwt, headers: { range: 'bytes=0-3' } })).status).toBe(206);
    expect((await call(t, 'GET', '/api/v1/files/:id', fileId, { jwt: alice.jwt, headers: { range: 'bytes=99-' } })).status).toBe(416);
    expect((await call(t, 'GET', '/api/v1/files/:id', fileId, { jwt: alice.jwt, headers: { 'if-none-match': `"${uploaded.body.sha256 as string}"` } })).status).toBe(304);
    expect((await call(t, 'GET', '/api/v1/files/:id', fileId, { jwt: bob.jwt })).status).toBe(404);
    // HEAD, as every HEAD route, is not an operation of its own in the document (GET's description says so).
    expect((await api.request('HEAD', `/api/v1/files/${fileId.id}`, { jwt: alice.jwt })).status).toBe(200);

    const members = await call(t, 'GET', '/api/v1/rooms/:id/members', roomId, { jwt: bob.jwt });
    expect(members.body.members.map((m: { agentId: string }) => m.agentId)).toContain(bob.id);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/members', roomId)).status).toBe(401);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/members', { id: 'x' }, { jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/members', { id: '00000000-0000-7000-8000-000000000000' }, { jwt: bob.jwt })).status).toBe(404);

    // Retention and export (docs/retention.md).
    expect((await call(t, 'PATCH', '/api/v1/rooms/:id', roomId, { body: { retentionDays: 30, legalHold: false }, jwt: admin.jwt })).status).toBe(200);
    expect((await call(t, 'PATCH', '/api/v1/rooms/:id', roomId, { body: { retentionDays: 0 }, jwt: admin.jwt })).status).toBe(400);
    expect((await call(t, 'PATCH', '/api/v1/rooms/:id', roomId, { body: { retentionDays: 7 }, jwt: bob.jwt })).status).toBe(403);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/export', roomId, { jwt: bob.jwt })).status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/rooms/:id/export?format=pdf', roomId, { jwt: bob.jwt })).status).toBe(400);

    const member = { roomId: roomId.id, agentId: bob.id };
    expect((await call(t, 'DELETE', '/rooms/:roomId/members/:agentId', member)).status).toBe(204);
    expect((await call(t, 'DELETE', '/rooms/:roomId/members/:agentId', member)).status).toBe(404);
    expect((await call(t, 'DELETE', '/rooms/:roomId/members/:agentId', { roomId: 'x', agentId: bob.id })).status).toBe(400);

    // Social feed.
    const channels = await call(t, 'GET', '/api/v1/social/channels', none, { jwt: alice.jwt });
    expect(channels.status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/social/channels', none)).status).toBe(401);
    const channelSlug = uniqueName('chan');
    const channel = await call(t, 'POST', '/api/v1/social/channels', none, { body: { slug: channelSlug, name: 'Chan' }, jwt: admin.jwt });
    expect(channel.status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/social/channels', none, { body: { slug: channelSlug, name: 'Chan' }, jwt: admin.jwt })).status).toBe(409);
    expect((await call(t, 'POST', '/api/v1/social/channels', none, { body: { slug: uniqueName('c'), name: 'C' }, jwt: alice.jwt })).status).toBe(403);
    const channelId = { channelId: channel.body.id as string };
    const posts = '/api/v1/social/channels/:channelId/posts';
    const post = await call(t, 'POST', posts, channelId, { body: { body: 'a post' }, jwt: alice.jwt });
    expect(post.status).toBe(201);
    expect((await call(t, 'POST', posts, { channelId: '00000000-0000-7000-8000-000000000000' }, { body: { body: 'x' }, jwt: alice.jwt })).status).toBe(404);
    expect((await call(t, 'GET', posts, channelId, { jwt: alice.jwt })).body.posts.length).toBe(1);
    expect((await call(t, 'GET', posts, { channelId: '00000000-0000-7000-8000-000000000000' }, { jwt: alice.jwt })).status).toBe(404);
    expect((await call(t, 'GET', '/api/v1/social/feed', none, { jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'GET', '/api/v1/social/feed?before=nope', none, { jwt: alice.jwt })).status).toBe(400);
    const postId = { id: post.body.id as string };
    const unknownPost = { id: '00000000-0000-7000-8000-000000000000' };
    expect((await call(t, 'POST', '/api/v1/social/posts/:id/replies', postId, { body: { body: 'a reply' }, jwt: bob.jwt })).status).toBe(201);
    expect((await call(t, 'POST', '/api/v1/social/posts/:id/replies', unknownPost, { body: { body: 'x' }, jwt: bob.jwt })).status).toBe(404);
    expect((await call(t, 'GET', '/api/v1/social/posts/:id/thread', postId, { jwt: bob.jwt })).body.replies.length).toBe(1);
    expect((await call(t, 'GET', '/api/v1/social/posts/:id/thread', unknownPost, { jwt: bob.jwt })).status).toBe(404);
    expect((await call(t, 'POST', '/api/v1/social/posts/:id/reactions', postId, { body: { emoji: '👍' }, jwt: bob.jwt })).body.action).toBe('added');
    expect((await call(t, 'GET', '/api/v1/social/posts/:id/reactions', postId, { jwt: bob.jwt })).body.reactions).toEqual([{ emoji: '👍', count: 1, reactedByMe: true }]);
    expect((await call(t, 'POST', '/api/v1/social/posts/:id/reactions', postId, { body: { emoji: '👍' }, jwt: bob.jwt })).body.action).toBe('removed');
    expect((await call(t, 'POST', '/api/v1/social/posts/:id/reactions', postId, { body: { emoji: '🙂' }, jwt: bob.jwt })).status).toBe(400);
    expect((await call(t, 'GET', '/api/v1/social/posts/:id/reactions', unknownPost, { jwt: bob.jwt })).status).toBe(404);

    // Directory.
    const directory = '/api/companies/:companyId/agents/directory';
    expect((await call(t, 'GET', `${directory}?role=admin`, { companyId: 'default' }, { jwt: alice.jwt })).status).toBe(200);
    expect((await call(t, 'GET', `${directory}?role=boss`, { companyId: 'default' }, { jwt: alice.jwt })).status).toBe(400);
    expect((await call(t, 'GET', directory, { companyId: 'other' }, { jwt: alice.jwt })).status).toBe(404);
    expect((await call(t, 'GET', directory, { companyId: 'default' })).status).toBe(401);

    // The audit log (docs/protocol.md, Audit log).
    const audit = await call(t, 'GET', `/api/v1/audit?subjectId=${roomId.id}&limit=10`, none, { jwt: admin.jwt });
    expect(audit.body.records.map((r: { event: string }) => r.event)).toContain('room-created');
    expect((await call(t, 'GET', '/api/v1/audit?before=00000000-0000-7000-8000-000000000000', none, { jwt: admin.jwt })).status).toBe(400);
    expect((await call(t, 'GET', '/api/v1/audit', none, { jwt: alice.jwt })).status).toBe(403);
    expect((await call(t, 'GET', '/api/v1/audit', none)).status).toBe(401);
  });

  describe('in strict mode', () => {
    const { server: strict, api: strictApi } = useTestServer({ config: { authzMode: 'strict' } });
    let strictDoc: OpenApiDocument;
    let admin: TestAgent;
    let agent: TestAgent;

    beforeAll(async () => {
      strictDoc = (await strictApi.get('/openapi.json')).body as OpenApiDocument;
      // The first admin comes from outside the API, as `ams admin create` makes it.
      admin = await bootstrapAdmin(strict.app.ctx.database.db, strictApi);
      agent = await newAgent(strictApi, { asJwt: admin.jwt });
    });

    it('the refusals of strict mode (401 without a JWT, 403 for a non-admin or a non-member) match the document', async () => {
      const t = { api: strictApi, doc: strictDoc };
      const room = (await call(t, 'POST', '/rooms', {}, { body: { slug: uniqueName('room'), name: 'R' }, jwt: admin.jwt })).body as { id: string };
      const adminOnly: [string, string, Record<string, string>, unknown][] = [
        ['POST', '/api/v1/agents', {}, { name: uniqueName('x'), displayName: 'X', role: 'agent' }],
        ['GET', '/api/v1/agents', {}, undefined],
        ['POST', '/api/v1/agents/:id/disable', { id: agent.id }, undefined],
        ['POST', '/api/v1/agents/:id/enable', { id: agent.id }, undefined],
        ['POST', '/api/v1/agents/:id/tokens', { id: agent.id }, {}],
        ['DELETE', '/api/v1/tokens/:prefix', { prefix: agent.prefix }, undefined],
        ['GET', '/api/v1/agents/:id/tokens', { id: agent.id }, undefined],
        ['POST', '/rooms', {}, { slug: uniqueName('r'), name: 'R' }],
        ['POST', '/rooms/:id/members', { id: room.id }, { agentId: agent.id }],
        ['DELETE', '/rooms/:roomId/members/:agentId', { roomId: room.id, agentId: agent.id }, undefined],
        ['GET', '/api/v1/audit', {}, undefined],
      ];
      for (const [method, path, params, body] of adminOnly) {
        expect((await call(t, method, path, params, { body })).status, `${method} ${path}`).toBe(401);
        expect((await call(t, method, path, params, { body, jwt: agent.jwt })).status, `${method} ${path}`).toBe(403);
      }
      expect((await call(t, 'GET', '/rooms', {})).status).toBe(401);
      expect((await call(t, 'GET', '/api/v1/rooms', {})).status).toBe(401);
      expect((await call(t, 'GET', '/api/v1/rooms/:id/messages', { id: room.id }, { jwt: agent.jwt })).status).toBe(403);
      expect((await call(t, 'GET', '/api/v1/rooms/:id/members', { id: room.id }, { jwt: agent.jwt })).status).toBe(403);
      expect((await call(t, 'GET', '/api/v1/rooms', {}, { jwt: agent.jwt })).body.rooms).toEqual([]);
    });
  });

  it('each operation answered at least one success and one error in the scenarios above', () => {
    const pathOf = (key: string): string => key.replace(/ \d+$/, '');
    const operations = Object.entries(document.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const succeeded = new Set([...seen].filter((k) => / 2\d\d$/.test(k)).map(pathOf));
    const failed = new Set([...seen].filter((k) => / 4\d\d$/.test(k)).map(pathOf));
    expect(operations.filter((op) => !succeeded.has(op))).toEqual([]);
    expect(operations.filter((op) => !failed.has(op) && !/^GET \/(healthz|readyz)$/.test(op))).toEqual([]);
  });
});
