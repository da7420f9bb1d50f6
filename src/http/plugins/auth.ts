import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AppContext } from '../../context.js';
import { looksLikeApiToken } from '../../core/auth/api-token.js';
import { AppError } from '../../errors.js';
import { OPS_ROUTES } from '../routes/ops.routes.js';
import { admit } from '../../rate-limits.js';

/** The bearer value of the Authorization header, if any. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * Per request, once: the principal from a session JWT, or on a route that accepts one (`/mcp`) an
 * API token (an invalid, expired or revoked one leaves it null and the route decides whether that
 * is a 401; a database outage while checking is a 503), then the rate limit: per agent with a
 * valid credential, per IP otherwise (API-token exchanges included). An API token whose
 * verification is not cached is also admitted per IP before it is hashed, as an exchange is.
 */
export function registerAuthAndRateLimit(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    const bearer = bearerOf(request);
    const isApiToken = bearer !== undefined && looksLikeApiToken(bearer);
    if (bearer !== undefined && (!isApiToken || request.routeOptions.config.acceptsApiToken === true)) {
      if (isApiToken && !ctx.apiTokenAuth.isVerified(bearer)) await admitOrThrow(ctx, request, ctx.rateLimits.restAnon, request.ip);
      try {
        request.principal = isApiToken ? await ctx.apiTokenAuth.authenticate(bearer) : await ctx.sessionAuth.authenticate(bearer);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'UNAUTHENTICATED')) throw err;
        request.principal = null;
      }
    }
    const limiter = request.principal ? ctx.rateLimits.restAgent : ctx.rateLimits.restAnon;
    const key = request.principal ? request.principal.agentId : request.ip;
    await admitOrThrow(ctx, request, limiter, key);
  });
}

/** Takes a point from the limiter; throws 429 over the limit, 503 when its store failed (probes excepted). */
async function admitOrThrow(ctx: AppContext, request: FastifyRequest, limiter: RateLimiterAbstract, key: string): Promise<void> {
  const admission = await admit([limiter, key]);
  if (admission.admitted) return;
  if (admission.reason === 'limited') {
    ctx.metrics.rateLimitExceeded.inc({ transport: 'http' });
    throw new AppError('RATE_LIMITED', 'Too Many Requests');
  }
  // The limiter's store (Redis) failed: refuse rather than run unlimited, except for probes.
  if (OPS_ROUTES.has(request.routeOptions.url ?? '')) return;
  const { error } = admission;
  request.log.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'rate limiter unavailable');
  throw new AppError('UNAVAILABLE', 'Rate limiter unavailable');
}
