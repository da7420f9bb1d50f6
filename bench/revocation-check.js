// What the strict-mode token-state check costs a REST request (docs/reliability.md): the same
// server, GET /api/v1/rooms with an admin JWT, with the check as shipped (per-node cache), with a
// database read on every request, and with no check at all; interleaved rounds, SQLite and (when
// reachable) PostgreSQL. `npm run build && node bench/revocation-check.js [--seconds 5] [--rounds 3]`
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { createPostgresDatabase, createSqliteDatabase } from '../test/helpers/databases.js';
import { pino } from 'pino';
import { startApp } from '../dist/app.js';
import { buildConfig } from '../dist/config/config.js';
import { createAgentsService } from '../dist/core/agents/agents.service.js';
import { createAuthz } from '../dist/core/authz/authz.js';
import { createTokensService } from '../dist/core/auth/tokens.service.js';
import { nullPublisher } from '../dist/core/events.js';

const { fetch } = globalThis;
const { values: opts } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' }, path: { type: 'string', default: '/api/v1/rooms' } } });
const PG_URL = process.env.AMS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function database(dialect) {
  return dialect === 'sqlite' ? createSqliteDatabase('ams-bench') : createPostgresDatabase(PG_URL, 'ams_bench');
}

async function run(dialect) {
  const db = await database(dialect);
  const config = buildConfig({
    DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', AUTHZ_MODE: 'strict',
    JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123', RATE_LIMIT_AGENT_PER_MINUTE: '10000000', RATE_LIMIT_ANON_PER_MINUTE: '10000000',
  });
  const app = await startApp(config, pino({ level: 'silent' }));
  try {
    const store = app.ctx.database.db;
    const authz = createAuthz('open');
    const admin = await createAgentsService({ db: store, authz }).create(null, { name: `bench-${Date.now()}`, displayName: 'Bench', role: 'admin' });
    const token = await createTokensService({ db: store, authz, events: nullPublisher }).issue(null, admin.id, {});
    const session = await (await fetch(`${app.url}/api/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiToken: token.token }) })).json();

    const auth = app.ctx.sessionAuth;
    const shipped = auth.authenticate;
    const variants = {
      'no check': async (jwt) => app.ctx.sessions.authenticate(jwt),
      'cached (shipped)': shipped,
      'database read every request': async (jwt) => {
        const principal = app.ctx.sessions.authenticate(jwt);
        await auth.assertLive(principal, { fresh: true });
        return principal;
      },
    };
    const measure = () => new Promise((resolve, reject) => autocannon({
      url: `${app.url}${opts.path}`, connections: 10, duration: Number(opts.seconds), headers: { authorization: `Bearer ${session.token}` },
    }, (err, result) => (err ? reject(err) : resolve(result))));

    await measure(); // warm-up
    const results = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
    for (let round = 0; round < Number(opts.rounds); round++) {
      for (const [name, authenticate] of Object.entries(variants)) {
        auth.authenticate = authenticate;
        const r = await measure();
        if (r.non2xx > 0) throw new Error(`${name}: ${r.non2xx} non-2xx responses`);
        results[name].push({ rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99 });
      }
    }
    auth.authenticate = shipped;

    // The check alone, sequentially: cached, then uncached.
    const principal = app.ctx.sessions.authenticate(session.token);
    const micro = {};
    for (const [name, fresh] of [['cached', false], ['database read', true]]) {
      const n = 5000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await auth.assertLive(principal, { fresh });
      micro[name] = `${(((performance.now() - t0) / n) * 1000).toFixed(1)} µs`;
    }

    console.log(`\n${dialect}: GET ${opts.path}, 10 connections, ${opts.seconds} s x ${opts.rounds} rounds (interleaved)`);
    for (const [name, rows] of Object.entries(results)) {
      const mean = Math.round(rows.reduce((a, r) => a + r.rps, 0) / rows.length);
      console.log(`  ${name.padEnd(28)} ${String(mean).padStart(6)} req/s   rounds: ${rows.map((r) => `${r.rps} (p50 ${r.p50} ms, p99 ${r.p99} ms)`).join(', ')}`);
    }
    console.log(`  assertLive alone (sequential): ${JSON.stringify(micro)}`);
  } finally {
    await app.close();
    await db.drop();
  }
}

await run('sqlite');
try {
  const probe = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 1000 });
  await probe.connect();
  await probe.end();
} catch {
  console.log(`\npostgres: not reachable at ${PG_URL}; skipped`);
  process.exit(0);
}
await run('postgres');
