import { Agent, request as httpRequest } from 'node:http';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/build.js';
import { Api } from '../helpers/api.js';
import { createTestDatabase, spawnServer, startServerProcess, startTestServer, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from '../helpers/server.js';

describe('process lifecycle: node dist/main.js', () => {
  let db: TestDatabase | undefined;
  let running: StartedServer | undefined;
  beforeAll(ensureBuilt, 180_000);
  afterEach(async () => {
    await running?.kill();
    running = undefined;
    await db?.drop();
    db = undefined;
  });

  async function startServer(): Promise<{ url: string }> {
    db = await createTestDatabase();
    running = await startServerProcess({ DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET });
    return { url: running.url };
  }

  it('SIGTERM: stops accepting, lets the in-flight request finish, closes the database and exits 0', async () => {
    const { url } = await startServer();
    const { port } = new URL(url);
    const body = JSON.stringify({ name: `inflight-${Date.now()}`, displayName: 'In flight', role: 'agent' });
    const half = Math.floor(body.length / 2);

    // A client that keeps idle connections open for ever, as a load balancer might: the server must
    // not wait for it to hang up (the 15 s deadline would then exit 1).
    const keepAlive = new Agent({ keepAlive: true });
    // A request whose body arrives in two parts: it is in flight while the signal arrives.
    const response = new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/api/v1/agents', agent: keepAlive, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, connection: res.headers.connection }));
      });
      req.on('error', reject);
      req.write(body.slice(0, half));
      void running!.waitForLog((l) => l.msg === 'shutting down').then(() => {
        // The listener is closed: a new connection is refused while this request is still open.
        void fetch(`${url}/healthz`).then(
          () => reject(new Error('a new connection was accepted during shutdown')),
          () => req.end(body.slice(half)),
        );
      });
    });
    await running!.waitForLog((l) => l.msg === 'incoming request' && (l.req as { url?: string } | undefined)?.url === '/api/v1/agents');
    running!.child.kill('SIGTERM');

    const res = await response;
    expect(res.status).toBe(201);
    expect(res.connection).toBe('close');
    const created = JSON.parse(res.body) as { id: string; name: string };
    const exit = await running!.exit;
    keepAlive.destroy();
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.stderr).toBe('');
    expect(exit.stdout).not.toContain('shutdown took longer');

    // The agent was committed before the process exited.
    const server = await startTestServer({ db: db! });
    try {
      const agents = await new Api(server.url).get('/api/v1/agents');
      expect(agents.body).toContainEqual(expect.objectContaining({ id: created.id, name: created.name }));
    } finally {
      await server.close({ keepDatabase: true });
    }
  });

  it('SIGINT on an idle server exits 0 promptly', async () => {
    const { url } = await startServer();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    running!.child.kill('SIGINT');
    expect((await running!.exit).code).toBe(0);
  });

  it.concurrent.each([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['JWT_SECRET', { JWT_SECRET: 'too-short' }],
    ['AUTHZ_MODE', { AUTHZ_MODE: 'x' }],
    ['JWT_SECRET', { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/none' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/db' }],
    ['RATE_LIMIT_ANON_PER_MINUTE', { RATE_LIMIT_ANON_PER_MINUTE: '0' }],
    ['JWT_TTL_SECONDS', { JWT_TTL_SECONDS: '15m' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['REDIS_URL', { REDIS_URL: 'localhost:6379' }],
  ])('invalid configuration (%s): one clear line naming the variable, exit code 1', async (variable, env) => {
    const child = await spawnServer({ DATABASE_URL: 'sqlite::memory:', ...env });
    const exit = await child.exit;
    expect(exit.code).toBe(1);
    expect(exit.stdout).toBe('');
    const lines = exit.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toMatch(/^configuration error: /);
  });
});
