import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { describe, SECURITY } from '../openapi.js';

const CHECK_TIMEOUT_MS = 2000;

/**
 * Operational routes. They are rate limited like every request, but when the limiter's store
 * (Redis) fails they are let through: a probe must see the outage in /readyz's checks instead of
 * being refused by it, and liveness must not depend on Redis.
 */
export const OPS_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

async function check(probe: () => Promise<unknown>): Promise<'ok' | 'fail'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([probe(), timeout]);
    return 'ok';
  } catch {
    return 'fail';
  } finally {
    clearTimeout(timer);
  }
}

const Check = Type.Union([Type.Literal('ok'), Type.Literal('fail')]);
const Readiness = Type.Object(
  { status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]), checks: Type.Object({ database: Check, redis: Type.Optional(Check) }) },
  { title: 'Readiness' },
);

export function opsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/healthz', {
    schema: describe({
      operationId: 'healthz', summary: 'Liveness', tags: ['ops'], security: SECURITY.none,
      success: { 200: { schema: Type.Object({ status: Type.Literal('ok') }, { title: 'Health' }), description: 'The process is alive' } },
    }),
  }, () => ({ status: 'ok' }));

  app.get('/readyz', {
    schema: describe({
      operationId: 'readyz', summary: 'Readiness: the database (and Redis when configured) answer', tags: ['ops'], security: SECURITY.none,
      success: {
        200: { schema: Readiness, description: 'Ready' },
        503: { schema: Readiness, description: 'Not ready: the failing check is marked fail' },
      },
    }),
  }, async (_request, reply) => {
    const checks: Record<string, 'ok' | 'fail'> = { database: await check(() => ctx.database.ping()) };
    if (ctx.redis) {
      const redis = ctx.redis;
      checks.redis = await check(() => redis.ping());
    }
    const ready = Object.values(checks).every((c) => c === 'ok');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks });
  });

  // Prometheus text format; left out of /openapi.json (docs/protocol.md, The API describes itself).
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const body = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(body);
  });
}
