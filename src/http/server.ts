import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { opsRoutes } from '../ops/ops.routes.js';
import { registerAuthAndRateLimit } from './plugins/auth.js';
import { frameworkErrorHandler, registerErrorHandling } from './plugins/errors.js';
import { agentsRoutes } from './routes/agents.routes.js';
import { authRoutes } from './routes/auth.routes.js';
import { directoryRoutes } from './routes/directory.routes.js';
import { messagesRoutes } from './routes/messages.routes.js';
import { roomsRoutes } from './routes/rooms.routes.js';
import { searchRoutes } from './routes/search.routes.js';
import { socialRoutes } from './routes/social.routes.js';
import './types.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

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
    // Deliberate timeouts: a request may take 30 s at most; idle keep-alive outlives typical
    // load-balancer idle timeouts (60 s) so the balancer closes first.
    requestTimeout: 30_000,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Path ids longer than a UUID reach the route and get its 400 with details, not a router 414.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // Errors the router raises before any route runs (malformed percent-encoding, over-long
    // segment) get the one error shape too, instead of Fastify's own body.
    frameworkErrors: frameworkErrorHandler,
  });

  // JSON bodies through Fastify's own safe parser (it strips __proto__ / constructor.prototype);
  // an empty body with a JSON content type means "no body" rather than an error.
  const defaultJsonParser = app.getDefaultJsonParser('remove', 'remove');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
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
  registerAuthAndRateLimit(app, ctx);

  app.addHook('onResponse', (request, reply, done) => {
    ctx.metrics.httpRequests.inc({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    });
    done();
  });

  opsRoutes(app, ctx);
  agentsRoutes(app, ctx);
  authRoutes(app, ctx);
  roomsRoutes(app, ctx);
  messagesRoutes(app, ctx);
  searchRoutes(app, ctx);
  socialRoutes(app, ctx);
  directoryRoutes(app, ctx);
  return app;
}
