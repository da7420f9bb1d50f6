import { hash, verify } from '@node-rs/argon2';
import Fastify from 'fastify';

/**
 * Scenario 4's second baseline: the ceiling the framework itself allows. A bare Fastify route
 * `POST /api/v1/sessions` that does one Argon2id verify (the service's parameters) behind the same
 * one-at-a-time gate and answers a session-shaped body, and nothing else: no token lookup, no JWT,
 * no audit record, no rate limit, no metrics. On one core, HTTP's own work shares the core with the
 * hash, so this route's rate over raw Argon2id's is the most any service on this stack can reach.
 */
const options = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }; // 2: Argon2id
const secret = 'a'.repeat(64);
const stored = await hash(secret, options);
const HASHING_AT_ONCE = 1; // the service's gate on one core: cores less one, at least one

let running = 0;
const waiting = [];
async function gatedVerify() {
  if (running < HASHING_AT_ONCE) running++;
  else await new Promise((resolve) => waiting.push(resolve));
  try {
    return await verify(stored, secret, options);
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

const app = Fastify({ logger: false });
app.get('/healthz', () => ({ status: 'ok' }));
app.post('/api/v1/sessions', async (_request, reply) => {
  if (!(await gatedVerify())) throw new Error('verify failed');
  const exp = Math.floor(Date.now() / 1000) + 900;
  reply.code(201);
  return { token: `eyJ${'x'.repeat(200)}`, expiresAt: new Date(exp * 1000).toISOString() };
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
