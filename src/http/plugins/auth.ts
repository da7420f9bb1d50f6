import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AppContext } from '../../context.js';
import { authenticateCredential, costsHash } from '../../core/auth/authenticate.js';
import { AppError } from '../../errors.js';
import { admit } from '../../limits/index.js';
import { admissionRefusal } from '../../limits/rate-limits.js';
import { mcpResource } from '../../mcp/mcp.routes.js';
import { OPS_ROUTES } from '../routes/ops.routes.js';

/** The bearer value of the Authorization header, if any. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * Per request, once: the bearer is extracted here and decided by core/auth (a session JWT, or on a
 * route that accepts one, `/mcp`, an API token). A refused credential leaves the principal null and
 * its reason in `authFailure` (the route decides whether that is a 401; a database outage while
 * checking is a 503). Then the rate limit (src/limits/): per agent with a valid credential, per IP
 * otherwise (API-token exchanges included). An API token whose verification is not cached is also
 * admitted per IP before it is hashed, as an exchange is.
 */
export function registerAuthAndRateLimit(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('authFailure', null);
  app.decorateRequest('chargeMore', function chargeMore(this: FastifyRequest, points: number) {
    return chargeRequest(ctx, this, points);
  });
  app.addHook('onRequest', async (request) => {
    const bearer = bearerOf(request);
    if (bearer !== undefined) {
      const { acceptsApiToken, acceptsOAuth } = request.routeOptions.config;
      const options = { apiToken: acceptsApiToken === true, ...(acceptsOAuth === true ? { oauthResource: mcpResource(ctx) } : {}) };
      if (costsHash(ctx, bearer, options)) await admitOrThrow(ctx, request, ctx.limits.restAnon, request.ip);
      try {
        request.principal = await authenticateCredential(ctx, bearer, options);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'UNAUTHENTICATED')) throw err;
        request.principal = null;
        request.authFailure = err;
      }
    }
    const limiter = request.principal ? ctx.limits.restAgent : ctx.limits.restAnon;
    const key = request.principal ? request.principal.agentId : request.ip;
    await admitOrThrow(ctx, request, limiter, key);
  });
}

/**
 * Takes `points` (one per request; the MCP route takes one more per further call of a JSON-RPC
 * batch) from the request's limiter: per agent with a principal, per IP otherwise. Throws 429 over
 * the limit, 503 when its store failed (probes excepted).
 */
export async function chargeRequest(ctx: AppContext, request: FastifyRequest, points: number): Promise<void> {
  if (points <= 0) return;
  const limiter = request.principal ? ctx.limits.restAgent : ctx.limits.restAnon;
  await admitOrThrow(ctx, request, limiter, request.principal ? request.principal.agentId : request.ip, points);
}

async function admitOrThrow(ctx: AppContext, request: FastifyRequest, limiter: RateLimiterAbstract, key: string, points = 1): Promise<void> {
  const admission = await admit([limiter, key, points]);
  if (admission.admitted) return;
  if (admission.reason === 'limited') {
    ctx.metrics.rateLimitExceeded.inc({ transport: 'http' });
  } else {
    // Probes answer even when the limiter's store is away.
    if (OPS_ROUTES.has(request.routeOptions.url ?? '')) return;
    const { error } = admission;
    request.log.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'rate limiter unavailable');
  }
  throw admissionRefusal(admission, 'Too Many Requests');
}
