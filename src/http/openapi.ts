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
 * (AsyncAPI 3.0, the WebSocket namespace: realtime/asyncapi.ts).
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
  if (route.description !== undefined) schema.description = route.description;
  if (route.params) schema.params = route.params;
  if (route.querystring) schema.querystring = route.querystring;
  if (route.headers) schema.headers = route.headers;
  if (route.body) schema.body = route.body;
  return schema as FastifySchema;
}

type JsonObject = Record<string, unknown>;
const ERROR_BODY_REF = '#/components/schemas/ErrorBody';

/** Every error response names the one ErrorBody component instead of repeating it. */
function shareErrorBody(document: JsonObject): void {
  const components = (document.components ??= {}) as JsonObject;
  const schemas = (components.schemas ??= {}) as JsonObject;
  const errorBody = JSON.parse(JSON.stringify(ErrorBody)) as JsonObject;
  schemas.ErrorBody = errorBody;
  for (const pathItem of Object.values(document.paths as Record<string, Record<string, JsonObject>>)) {
    for (const operation of Object.values(pathItem)) {
      for (const response of Object.values((operation.responses ?? {}) as Record<string, JsonObject>)) {
        const media = (response.content as Record<string, JsonObject> | undefined)?.['application/json'];
        if ((media?.schema as JsonObject | undefined)?.title === errorBody.title) media!.schema = { $ref: ERROR_BODY_REF };
      }
    }
  }
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
        description:
          'REST interface of the Agent Messaging Service. Every error body is `{error, details?}`. ' +
          'The WebSocket interface (namespace `/agents`) is described by `/asyncapi.json`.',
      },
      components: {
        securitySchemes: {
          jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Session JWT from POST /api/v1/sessions' },
          apiToken: { type: 'http', scheme: 'bearer', description: 'API token agt_<prefix>_<secret> (only for POST /api/v1/sessions)' },
          agentId: { type: 'apiKey', in: 'header', name: 'X-Agent-Id', description: 'Open mode only: the id of an admin agent (POST /rooms)' },
        },
      },
      tags: [
        { name: 'agents', description: 'Agents and their state' },
        { name: 'auth', description: 'API tokens and session JWTs' },
        { name: 'rooms', description: 'Rooms and memberships' },
        { name: 'messages', description: 'Room messages' },
        { name: 'social', description: 'Channels, posts, threads and reactions' },
        { name: 'directory', description: 'The agent directory' },
        { name: 'webhooks', description: 'Signed HTTP deliveries of messages to agents that are not connected' },
        { name: 'ops', description: 'Health and readiness' },
      ],
    },
    transformObject: (documentObject) => {
      const document = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      standardiseText(document);
      shareErrorBody(document as JsonObject);
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
