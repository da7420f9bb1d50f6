import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { looksLikeApiToken } from '../../core/auth/api-token.js';
import { AppError } from '../../errors.js';
import { OPS_ROUTES } from '../../ops/ops.routes.js';
import { admit } from '../../rate-limits.js';

/** The bearer value of the Authorization header, if any. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * Per request, once: the principal from a session JWT (an invalid, expired or, in strict mode,
 * revoked one leaves it null and the route decides whether that is a 401; a database outage while
 * checking is a 503), then the rate limit: per agent with a valid JWT, per IP otherwise (API-token
 * exchanges included).
 */
export function registerAuthAndRateLimit(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    const bearer = bearerOf(request);
    if (bearer !== undefined && !looksLikeApiToken(bearer)) {
      try {
        request.principal = await ctx.sessionAuth.authenticate(bearer);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'UNAUTHENTICATED')) throw err;
        request.principal = null;
      }
    }
    const limiter = request.principal ? ctx.rateLimits.restAgent : ctx.rateLimits.restAnon;
    const key = request.principal ? request.principal.agentId : request.ip;
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
  });
}
