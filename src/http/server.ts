import { isUtf8 } from 'node:buffer';
import cors from '@fastify/cors';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { AppError } from '../errors.js';
import { a2aRoutes } from '../a2a/a2a.routes.js';
import { mcpRoutes } from '../mcp/mcp.routes.js';
import { opsRoutes } from './routes/ops.routes.js';
import { registerOpenApi } from './openapi.js';
import { registerAuthAndRateLimit } from './plugins/auth.js';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './plugins/errors.js';
import { agentsRoutes } from './routes/agents.routes.js';
import { auditRoutes } from './routes/audit.routes.js';
import { authRoutes } from './routes/auth.routes.js';
import { consoleRoutes } from './routes/console.routes.js';
import { directoryRoutes } from './routes/directory.routes.js';
import { filesRoutes } from './routes/files.routes.js';
import { inboxRoutes } from './routes/inbox.routes.js';
import { tasksRoutes } from './routes/tasks.routes.js';
import { leasesRoutes } from './routes/leases.routes.js';
import { messagesRoutes } from './routes/messages.routes.js';
import { acksRoutes } from './routes/acks.routes.js';
import { oauthRoutes } from './routes/oauth.routes.js';
import { roomsRoutes } from './routes/rooms.routes.js';
import { searchRoutes } from './routes/search.routes.js';
import { socialRoutes } from './routes/social.routes.js';
import { webhooksRoutes } from './routes/webhooks.routes.js';
import './types.js';

/** The largest body any request may send (a route without its own limit below gets this one). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

const KiB = 1024;
/**
 * Each route's body limit, sized to what the route needs, so a body costs time in proportion to
 * the route's work (a 1 MiB body to a token exchange was 0.23 s of CPU). The sizes assume the worst
 * legal encoding: every character of a text field JSON-escaped (`\ud83d\ude00`, 12 bytes for one
 * code point), so no valid request is refused for its size.
 */
export const ROUTE_BODY_LIMITS: Readonly<Record<string, number>> = {
  // {apiToken}: about 60 characters.
  'POST /api/v1/sessions': 4 * KiB,
  // name (64), displayName (128 code points), role.
  'POST /api/v1/agents': 8 * KiB,
  // scopes: at most 4096 bytes once serialised compactly (more when escaped or indented), expiresAt.
  'POST /api/v1/agents/:id/tokens': 64 * KiB,
  // displayName (128), description (1000) and 20 skills of at most 984 code points each, 12 bytes
  // each escaped: about 250 KiB.
  'PATCH /api/v1/agents/:id': 320 * KiB,
  // No body is needed; an empty object or none.
  'POST /api/v1/agents/:id/disable': 4 * KiB,
  'POST /api/v1/agents/:id/enable': 4 * KiB,
  'DELETE /api/v1/tokens/:prefix': 4 * KiB,
  'DELETE /api/v1/agents/:id/tokens/:tokenId': 4 * KiB,
  // Not applied: the library reads its own bodies (at most 56 KiB), the consent form is read by its
  // route (at most 8 KiB). Listed so that every route with a body is here.
  'POST /oauth/authorize': 4 * KiB,
  'POST /oauth/token': 4 * KiB,
  'POST /oauth/register': 4 * KiB,
  'POST /oauth/revoke': 4 * KiB,
  'POST /oauth/interaction/:uid': 4 * KiB,
  // slug, name and up to 1000 member UUIDs (39 bytes each).
  'POST /rooms': 64 * KiB,
  'POST /rooms/:id/members': 4 * KiB,
  'DELETE /rooms/:roomId/members/:agentId': 4 * KiB,
  // {retentionDays, legalHold}.
  'PATCH /api/v1/rooms/:id': 4 * KiB,
  // 16 384 code points of 12 bytes each (192 KiB), up to 100 mentions, replyTo, clientMsgId, and
  // `data` of 32 KiB compact JSON, escaped (docs/protocol.md, Limits).
  'POST /api/v1/rooms/:id/messages': 512 * KiB,
  // {body}: as a send's body.
  'PATCH /api/v1/rooms/:id/messages/:messageId': 256 * KiB,
  'DELETE /api/v1/rooms/:id/messages/:messageId': 4 * KiB,
  // No body is needed (docs/acknowledgements.md).
  'POST /api/v1/rooms/:id/messages/:messageId/ack': 4 * KiB,
  // {text}: up to a whole body's 16 384 code points of 12 bytes each escaped (docs/streaming.md).
  'POST /api/v1/rooms/:id/messages/:messageId/append': 256 * KiB,
  // {body?, data?}: as a send's.
  'POST /api/v1/rooms/:id/messages/:messageId/end': 512 * KiB,
  // resource (512 code points), reason (200), clientLeaseId, ttlSeconds, exclusive (docs/leases.md).
  'POST /api/v1/rooms/:id/leases': 16 * KiB,
  'POST /api/v1/rooms/:id/leases/:leaseId/renew': 4 * KiB,
  'DELETE /api/v1/rooms/:id/leases/:leaseId': 4 * KiB,
  // {queue, leaseSeconds, wait} or {leaseSeconds} (docs/tasks.md, queues).
  'POST /api/v1/tasks/claim': 4 * KiB,
  'POST /api/v1/tasks/:id/claim': 4 * KiB,
  'POST /api/v1/tasks/:id/heartbeat': 4 * KiB,
  // state and a text of 80 code points (12 bytes each escaped).
  'POST /api/v1/rooms/:id/activity': 4 * KiB,
  // {seq}.
  'POST /api/v1/rooms/:id/read': 4 * KiB,
  // {agentId}.
  'POST /api/v1/direct-rooms': 4 * KiB,
  'POST /api/v1/social/channels': 8 * KiB,
  'POST /api/v1/social/channels/:channelId/posts': 256 * KiB,
  'POST /api/v1/social/posts/:id/replies': 256 * KiB,
  'POST /api/v1/social/posts/:id/reactions': 4 * KiB,
  // One JSON-RPC message: the largest is upload_file's, 1 MiB of file in base64 (1366 KiB) with its
  // name and type; then send_message's (a message body as above, its arguments).
  'POST /mcp': 1400 * KiB,
  'DELETE /mcp': 4 * KiB,
  // One A2A JSON-RPC request: a message's text parts (a task's body, 16 384 code points of 12 bytes
  // each escaped), a data part (32 KiB of JSON, escaped) and the envelope.
  'POST /a2a/:agent': 512 * KiB,
  // url (2048 code points, up to 8 KiB in UTF-8), events, mode.
  'POST /api/v1/agents/:id/webhooks': 16 * KiB,
  'DELETE /api/v1/agents/:id/webhooks/:webhookId': 4 * KiB,
  // Not applied: the route's parser hands the body over as a stream, unread (Fastify applies a body
  // limit only to the bodies it reads), and the files service cuts it off at FILE_MAX_BYTES
  // (docs/files.md). Listed so that every route with a body is here.
  'POST /api/v1/files': 4 * KiB,
  // title (200 code points), input {body as a send's, data, attachments}, room, dueAt, clientTaskId.
  'POST /api/v1/tasks': 512 * KiB,
  // state, message {body as a send's, data, attachments}, result (16 KiB as JSON).
  'POST /api/v1/tasks/:id/state': 512 * KiB,
};

/**
 * JSON bodies nest at most this deep (the deepest legal body, token scopes, nests 17 levels).
 * Checked on the raw bytes before parsing, so a deeply nested body costs one linear scan.
 */
export const JSON_MAX_DEPTH = 32;

/** True when arrays and objects nest deeper than `max`; brackets inside strings do not count. */
/** The 400 of a JSON body nested deeper than JSON_MAX_DEPTH, or null (the /a2a routes' parser asks it too). */
const depthError = (bytes: Buffer): AppError | null => (nestsDeeperThan(bytes, JSON_MAX_DEPTH)
  ? new AppError('BAD_REQUEST', 'JSON body is nested too deeply', { body: `must not nest arrays and objects more than ${JSON_MAX_DEPTH} levels deep` })
  : null);

function nestsDeeperThan(bytes: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === 0x5c) i++; // backslash: the next byte is escaped
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > max) return true;
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** TRUST_PROXY as Fastify takes it: a hop count becomes "trust the first n hops". */
function trustProxyOption(value: boolean | string | number): boolean | string | ((address: string, hop: number) => boolean) {
  return typeof value === 'number' ? (_address, hop) => hop < value : value;
}

export function buildHttpServer(ctx: AppContext): FastifyInstance {
  const app = Fastify({
    // Typed as Fastify's base logger so routes see the default FastifyInstance type.
    loggerInstance: ctx.logger as FastifyBaseLogger,
    trustProxy: trustProxyOption(ctx.config.trustProxy),
    bodyLimit: BODY_LIMIT_BYTES,
    // Deliberate timeouts: a request may take 30 s (REQUEST_TIMEOUT_SECONDS) at most to arrive, headers included; idle
    // keep-alive outlives typical load-balancer idle timeouts (60 s) so the balancer closes first.
    requestTimeout: ctx.config.requestTimeoutMs,
    keepAliveTimeout: 72_000,
    // Node checks the request timeouts every 30 s by default, which cut a slow upload anywhere
    // between 30 and 60 s: checked every second, the limit is the documented one.
    http: { headersTimeout: ctx.config.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Path ids longer than a UUID reach the route and get its 400 with details, not a router 414.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // Errors the router raises before any route runs (malformed percent-encoding, over-long
    // segment) get the one error shape too, instead of Fastify's own body.
    frameworkErrors: frameworkErrorHandler,
    // Errors of Node's HTTP parser (headers over the limit: 431) in the one error shape as well.
    clientErrorHandler,
  });

  // Registered before the routes, so each gets its limit as it is added.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const limit = ROUTE_BODY_LIMITS[`${method} ${route.url}`];
      if (limit !== undefined) route.bodyLimit = limit;
    }
  });

  // JSON bodies through Fastify's own safe parser (it strips __proto__ / constructor.prototype),
  // after the cheap checks: nesting depth, then UTF-8 (decoding would turn invalid bytes into
  // U+FFFD and store them). An empty body with a JSON content type means "no body".
  const defaultJsonParser = app.getDefaultJsonParser('remove', 'remove');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const tooDeep = depthError(bytes);
    if (tooDeep !== null) {
      done(tooDeep, undefined);
      return;
    }
    if (!isUtf8(bytes)) {
      done(new AppError('BAD_REQUEST', 'Malformed JSON body', { body: 'must be valid UTF-8' }), undefined);
      return;
    }
    const text = bytes.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    defaultJsonParser(request, text, done);
  });

  // Graceful shutdown: once closing, every response tells its client to close the connection, so
  // an idle keep-alive socket cannot hold the process open until the client's own idle timeout.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });

  registerErrorHandling(app);
  // CORS for the listed origins only: preflights (answered before any route or authentication)
  // and responses to a listed Origin carry Access-Control-Allow-Origin, others none. With no
  // origins configured nothing is registered, and a preflight is an unknown route (404).
  if (ctx.config.corsOrigins.length > 0) {
    void app.register(cors, {
      origin: ctx.config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST', 'DELETE'],
      exposedHeaders: ['Retry-After'],
      maxAge: 600,
      // A preflight without Origin gets an empty 204 rather than the plugin's text/plain 400.
      strictPreflight: false,
    });
  }
  registerAuthAndRateLimit(app, ctx);

  app.addHook('onResponse', (request, reply, done) => {
    ctx.metrics.httpRequests.inc({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    });
    done();
  });

  registerOpenApi(app);
  // In a plugin registered after the document builder, so /openapi.json sees every route (and each
  // route's schema). The plugin only groups them: the hooks and handlers above apply as before.
  void app.register(async (api) => {
    opsRoutes(api, ctx);
    agentsRoutes(api, ctx);
    auditRoutes(api, ctx);
    authRoutes(api, ctx);
    roomsRoutes(api, ctx);
    messagesRoutes(api, ctx);
    acksRoutes(api, ctx);
    inboxRoutes(api, ctx);
    tasksRoutes(api, ctx);
    leasesRoutes(api, ctx);
    searchRoutes(api, ctx);
    socialRoutes(api, ctx);
    webhooksRoutes(api, ctx);
    directoryRoutes(api, ctx);
    filesRoutes(api, ctx);
    mcpRoutes(api, ctx);
    oauthRoutes(api, ctx);
    a2aRoutes(api, ctx, depthError);
  });
  // The web console (docs/console.md): a page, not part of the API documents.
  consoleRoutes(app, ctx);
  return app;
}
