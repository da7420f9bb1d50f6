import { packageVersion } from '../config/version.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { ErrorBody, standardiseText } from '@agent-messaging/protocol';
import { buildAsyncApiDocument } from '../realtime/asyncapi.js';

/**
 * The machine-readable description of the service (docs/protocol.md, The API describes itself): `GET /openapi.json`
 * (OpenAPI 3.1), `GET /docs` (Swagger UI, every asset served from here) and `GET /asyncapi.json`
 * (AsyncAPI 3.1, the WebSocket namespace: realtime/asyncapi.ts).
 *
 * Every route carries its schemas (`describe` below): the same TypeBox objects the domain services
 * validate with, and the response schema of its success and of each error status. Fastify only
 * reads them to build the document: validation stays in the services (one code path for REST and
 * WebSocket, one error shape `{error, details?}`), and replies are serialised with JSON.stringify
 * as before, so a response schema never strips or reorders a field.
 */

export const DOCS_PREFIX = '/docs';
export const OPENAPI_PATH = '/openapi.json';
export const ASYNCAPI_PATH = '/asyncapi.json';

/** The error statuses a route may give, each answered with ErrorBody. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 503;

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'Invalid input: `details` names each failing field (also malformed JSON, a path id that is not a UUID)',
  401: 'Missing, invalid or expired credentials',
  403: 'Not allowed (e.g. not an admin, not a member in strict mode, a room outside the token\'s `rooms`, or an action the session\'s token does not grant: `details.scope` is then "<action> required", docs/scopes.md)',
  404: 'A resource named by the request does not exist',
  409: 'Conflicts with an existing resource',
  413: 'Request body larger than this endpoint accepts',
  415: 'Content-Type is not application/json',
  429: 'Rate limit exceeded; the `Retry-After` header says when to retry (seconds)',
  503: 'A dependency (database, Redis) is unavailable; retry later',
};

/** Every request is rate limited and may meet a storage outage. */
const ALWAYS: readonly ErrorStatus[] = [429, 503];
/** What any JSON body may cause before the service sees it. */
const BODY_ERRORS: readonly ErrorStatus[] = [400, 413, 415];
/** What a session JWT may cause: its token's scope may not grant the call (docs/scopes.md). */
const JWT_ERRORS: readonly ErrorStatus[] = [403];

/** How a route authenticates, as OpenAPI security requirements. */
export const SECURITY = {
  /** A session JWT is required. */
  jwt: [{ jwt: [] }],
  /** A session JWT is required in strict mode (AUTHZ_MODE=strict) only. */
  jwtWhenStrict: [{ jwt: [] }, {}],
  /** An admin's X-Agent-Id (open mode) or an admin JWT. */
  roomCreator: [{ jwt: [] }, { agentId: [] }],
  /** An API token (header or body `apiToken`). */
  apiToken: [{ apiToken: [] }, {}],
  none: [],
} as const;

export interface RouteDescription {
  operationId: string;
  summary: string;
  tags: string[];
  security: (typeof SECURITY)[keyof typeof SECURITY];
  description?: string;
  params?: TSchema;
  querystring?: TSchema;
  headers?: TSchema;
  body?: TSchema;
  /** Success statuses and their bodies; null for a response without a body (204). */
  success: Record<number, { schema: TSchema | null; description: string }>;
  /** Error statuses this route can give besides 429 and 503 (and 400/413/415 with a body). */
  errors?: readonly ErrorStatus[];
}

/**
 * What each operation does beyond its summary, for operations whose route gives no `description`
 * of its own: the document's readers (and Spectral's `operation-description`) want one for every
 * operation. Keyed by operationId; a new route gives its own or adds a line here.
 */
const OPERATION_DESCRIPTIONS: Readonly<Record<string, string>> = {
  setActivity: 'Shows the room\'s members that the caller is `typing` (8 s), `working` (120 s, with a text of at most 80 characters) or `idle`, unless set again. '
    + 'Members only, in both modes; never stored. The members\' sockets get `activity:update` on every node, at most one per agent and room per second (the latest held state is sent when that second ends).',
  healthz: 'Answers 200 while the process runs, without touching any dependency: for a liveness probe.',
  readyz: 'Answers 200 when the database (and Redis, when configured) answer a query now, 503 with what failed otherwise: for a readiness probe or a load balancer.',
  createAgent: 'Creates an agent with a unique name, a display name and a role (admin or agent). The agent then needs an API token (issueToken) to sign in. Open mode: anyone may call it; strict mode: an admin\'s JWT.',
  listAgents: 'Every agent of the service with its role and whether it is disabled. The directory (GET /api/companies/{companyId}/agents/directory) is the variant for every agent, with online states.',
  disableAgent: 'Disables an agent: its tokens and sessions are refused from now on and its open connections are closed; its data is kept. enableAgent undoes it.',
  enableAgent: 'Enables a disabled agent again: its unrevoked tokens work again.',
  issueToken: 'Issues an API token `agt_<prefix>_<secret>` to an agent. The secret is in this answer only: store it. A token may carry `scopes` (actions and rooms, docs/scopes.md) and an expiry.',
  revokeToken: 'Revokes an API token by its prefix (`agt_<12 hex>`): it is refused from now on, on every node, and so are the session JWTs it issued.',
  createRoom: 'Creates a room with a unique slug and a name; the creator becomes a member, and so does every agent of `members`. Open mode: an admin named by X-Agent-Id or an admin\'s JWT; strict mode: an admin\'s JWT.',
  listRoomsUnversioned: 'The rooms, as GET /api/v1/rooms lists them but as a bare array and without read state (kept for clients of the first version).',
  listRooms: 'The rooms the caller sees: in open mode every room; in strict mode an agent\'s own rooms (an admin: all), within a scoped token\'s rooms. With a JWT, the caller\'s member rooms carry its readSeq and unreadCount.',
  markRead: 'Moves the caller\'s read cursor of a room forward to `seq` (never back; above the room\'s lastSeq is a 400). Answers the cursor and the messages from others still unread.',
  listMembers: 'The members of a room in the order they joined, with their display names and whether each is online now.',
  addMember: 'Adds an agent to a room; a connected agent\'s sockets are subscribed at once. Adding a member twice is a 409.',
  removeMember: 'Removes an agent from a room: its sockets leave the room and it receives nothing more from it.',
  history: 'Without afterSeq: a page of the room\'s history, newest first; pass nextCursor as `before` for older pages. With afterSeq: the messages after that seq, oldest first, with the room\'s lastSeq (catch-up after a disconnection).',
  searchMessages: 'Full-text search in the messages of the caller\'s rooms (an admin: every room), newest first: all words must match, case and accents ignored; "a phrase", prefix* and -excluded words are understood. Optionally one room; page with nextCursor as `before`.',
  listChannels: 'Every channel of the social feed (the service creates `general`).',
  createChannel: 'Creates a channel of the social feed with a unique slug and a name.',
  feed: 'Top-level posts of every channel, newest first, with their reply counts; page with nextCursor as `before`.',
  channelPosts: 'Top-level posts of one channel, newest first, with their reply counts; page with nextCursor as `before`.',
  createPost: 'Publishes a top-level post in a channel; every agent can read it.',
  thread: 'The thread of a post: its top-level post and every reply, oldest first. Any post of the thread names it.',
  reply: 'Replies to a post; a reply to a reply joins the top-level post\'s thread (threads are one level deep).',
  react: 'Toggles the caller\'s reaction on a post: adds it, or removes it when the caller had already reacted with that emoji. The answer says which.',
  reactions: 'The reaction counts of a post, per emoji, with whether the caller is among them.',
  listWebhooks: 'The webhook endpoints registered for an agent (the caller itself, or any agent for an admin), without their signing secrets.',
  deleteWebhook: 'Deletes a webhook endpoint of an agent; its pending deliveries are dropped with it.',
  listWebhookDeliveries: 'The delivery log of a webhook endpoint, newest first: each attempt\'s status, HTTP answer and next retry (docs/webhooks.md).',
  directory: 'Every agent of the company (COMPANY_ID) with its display name, role and whether it is online now (a socket connected on any node). Optionally one role.',
};

/** The Fastify route schema of a route: what /openapi.json says about it. */
export function describe(route: RouteDescription): FastifySchema {
  const response: Record<string, unknown> = {};
  for (const [status, { schema, description }] of Object.entries(route.success)) {
    response[status] = schema === null ? { type: 'null', description } : { ...schema, description };
  }
  const acceptsJwt = route.security.some((requirement) => 'jwt' in requirement);
  const errors = new Set<ErrorStatus>([...(route.errors ?? []), ...(route.body ? BODY_ERRORS : []), ...(acceptsJwt ? JWT_ERRORS : []), ...ALWAYS]);
  for (const status of [...errors].sort((a, b) => a - b)) {
    if (response[status] !== undefined) continue; // the route answers this status with its own body (/readyz 503)
    response[status] = { ...ErrorBody, description: ERROR_DESCRIPTIONS[status] };
  }
  const schema: Record<string, unknown> = {
    operationId: route.operationId,
    summary: route.summary,
    tags: route.tags,
    security: route.security,
    response,
  };
  const description = route.description ?? OPERATION_DESCRIPTIONS[route.operationId];
  if (description !== undefined) schema.description = description;
  if (route.params) schema.params = route.params;
  if (route.querystring) schema.querystring = route.querystring;
  if (route.headers) schema.headers = route.headers;
  if (route.body) schema.body = route.body;
  return schema as FastifySchema;
}

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Every schema with a `title` (the service's types: Message, Room, Agent, ErrorBody, ...) becomes
 * one component of `components.schemas` under that title, and each place that used it a `$ref`
 * (with the description of that place, when it has one), so that generators such as
 * openapi-typescript give each type its name. The routes keep plain TypeBox objects (the services
 * validate with them); naming happens here, once, on the built document. Two different schemas
 * with one title would make one of them wrong: that fails at the first build of the document.
 */
export function nameSchemas(document: JsonObject): void {
  const components = (document.components ??= {}) as JsonObject;
  const named = new Map<string, { json: string; schema: JsonObject }>();
  const hoist = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(hoist);
    if (!isObject(node)) return node;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) out[key] = hoist(value);
    const title = out.title;
    if (typeof title !== 'string') return out;
    const { description, ...schema } = out;
    const json = JSON.stringify(schema);
    const known = named.get(title);
    if (known === undefined) named.set(title, { json, schema });
    else if (known.json !== json) throw new Error(`OpenAPI: two different schemas are titled "${title}"; give one of them another title`);
    const ref = { $ref: `#/components/schemas/${encodeURIComponent(title)}` };
    return typeof description === 'string' ? { ...ref, description } : ref;
  };
  const withSchema = (holder: unknown): void => {
    if (isObject(holder) && holder.schema !== undefined) holder.schema = hoist(holder.schema);
  };
  for (const pathItem of Object.values(document.paths as Record<string, Record<string, JsonObject>>)) {
    for (const operation of Object.values(pathItem)) {
      if (!isObject(operation)) continue;
      if (Array.isArray(operation.parameters)) operation.parameters.forEach(withSchema);
      const body = operation.requestBody;
      if (isObject(body) && isObject(body.content)) Object.values(body.content).forEach(withSchema);
      for (const response of Object.values(isObject(operation.responses) ? operation.responses : {})) {
        if (!isObject(response) || !isObject(response.content)) continue;
        for (const media of Object.values(response.content)) {
          withSchema(media);
          // The response's description, which @fastify/swagger copies from the schema: said once.
          if (isObject(media) && isObject(media.schema) && media.schema.description === response.description) delete media.schema.description;
        }
      }
    }
  }
  const schemas = (components.schemas ??= {}) as JsonObject;
  for (const title of [...named.keys()].sort()) schemas[title] = named.get(title)!.schema;
}


/**
 * Registers the document builder, /openapi.json and /docs. The document collects the routes
 * registered after it loads: add them in a plugin registered after this call (server.ts).
 */
export function registerOpenApi(app: FastifyInstance): void {
  const version = packageVersion();
  // The services validate (schemas compiled once in core/, details keyed by field): Fastify's own
  // validation would answer in another shape, so it accepts everything.
  app.setValidatorCompiler(() => () => true);
  // Replies stay exactly what the handlers return (fast-json-stringify would drop undocumented fields).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Messaging Service',
        version,
        contact: { name: 'The operators of this deployment' },
        description:
          'REST interface of the Agent Messaging Service. Every error body is `{error, details?}`. ' +
          'The WebSocket interface (namespace `/agents`) is described by `/asyncapi.json`.',
      },
      // Relative: the service that serves this document (behind whatever host and port it is reached at).
      servers: [{ url: '/', description: 'This service' }],
      components: {
        securitySchemes: {
          jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Session JWT from POST /api/v1/sessions' },
          apiToken: { type: 'http', scheme: 'bearer', description: 'API token agt_<prefix>_<secret> (only for POST /api/v1/sessions)' },
          agentId: { type: 'apiKey', in: 'header', name: 'X-Agent-Id', description: 'Open mode only: the id of an admin agent (POST /rooms)' },
        },
      },
      tags: [
        { name: 'agents', description: 'Agents and their state' },
        { name: 'audit', description: 'The audit log, for admins' },
        { name: 'auth', description: 'API tokens and session JWTs' },
        { name: 'rooms', description: 'Rooms and memberships' },
        { name: 'messages', description: 'Room messages' },
        { name: 'social', description: 'Channels, posts, threads and reactions' },
        { name: 'directory', description: 'The agent directory' },
        { name: 'files', description: 'Files: uploaded as raw bytes, downloaded by the uploader and the members of rooms where a message carries them' },
        { name: 'tasks', description: 'Tasks and approvals handed from one agent to another, and work queues' },
        { name: 'leases', description: 'Leases on resources in a room: "I am changing this" for a while' },
        { name: 'webhooks', description: 'Signed HTTP deliveries of messages to agents that are not connected' },
        { name: 'ops', description: 'Health and readiness' },
      ],
    },
    transformObject: (documentObject) => {
      const document = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      standardiseText(document);
      nameSchemas(document as JsonObject);
      return document;
    },
  });

  void app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    // Everything from this service: no validator badge (it would load an image from another host).
    uiConfig: { validatorUrl: null, deepLinking: true },
    staticCSP: {
      'default-src': ["'self'"],
      'img-src': ["'self'", 'data:'],
      'style-src': ["'self'", "'unsafe-inline'"],
      'script-src': ["'self'"],
      'connect-src': ["'self'"],
      'object-src': ["'none'"],
      'base-uri': ["'self'"],
      'frame-ancestors': ["'self'"],
    },
  });

  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  // The WebSocket interface: built once, from realtime/protocol.ts's schemas.
  const asyncApi = buildAsyncApiDocument(version);
  app.get(ASYNCAPI_PATH, { schema: { hide: true } }, async () => asyncApi);
}
