import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI_JS, ensureBuilt, ROOT } from '../helpers/build.js';
import { Api, uniqueName } from '../helpers/api.js';
import { runAms, type CliResult } from '../helpers/cli.js';
import { runProcess } from '../helpers/processes.js';
import { createTestDatabase, startServerProcess, startTestServer, TEST_JWT_SECRET, type TestDatabase, type TestServer } from '../helpers/server.js';

/** Runs `ams <args>` against `databaseUrl`, with no other configuration. */
const ams = (databaseUrl: string, ...args: string[]): Promise<CliResult> => runAms({ DATABASE_URL: databaseUrl }, ...args);
const amsWithEnv = runAms;

interface AdminCreated {
  agent: { id: string; name: string; displayName: string; role: string; createdAt: string };
  token: { id: string; token: string; prefix: string; scopes: object; expiresAt: string | null; createdAt: string };
}

// Every test spawns several processes: on a busy machine they take longer than the default 30 s.
describe('the ams command line', { timeout: 120_000 }, () => {
  let db: TestDatabase;
  let server: TestServer | undefined;
  beforeAll(ensureBuilt, 180_000);
  afterEach(async () => {
    await server?.close({ keepDatabase: true });
    server = undefined;
    await db?.drop();
  });

  it('admin create --name: prints the admin and a token that a server on the same database exchanges', async () => {
    db = await createTestDatabase();
    const name = uniqueName('root');
    const res = await ams(db.url, 'admin', 'create', '--name', name, '--create-database');
    // Which database it used, on stderr (stdout is the JSON alone).
    expect(res.stderr).toMatch(/^ams: database: (SQLite \/|PostgreSQL postgres)[^\n]+\n$/);
    expect(res.code).toBe(0);
    const printed = JSON.parse(res.stdout) as AdminCreated;
    expect(printed.agent).toEqual({ id: expect.any(String), name, displayName: name, role: 'admin', createdAt: expect.any(String), disabledAt: null, description: '', skills: [] });
    expect(printed.token.token).toMatch(/^agt_[0-9a-f]{12}_[0-9a-f]{64}$/);
    expect(printed.token.token.startsWith(`${printed.token.prefix}_`)).toBe(true);

    server = await startTestServer({ db, config: { authzMode: 'strict' } });
    const api = new Api(server.url);
    const session = await api.post('/api/v1/sessions', { apiToken: printed.token.token });
    expect(session.status).toBe(201);
    const claims = JSON.parse(Buffer.from(session.body.token.split('.')[1], 'base64url').toString('utf8')) as { agentId: string; role: string };
    expect(claims).toMatchObject({ agentId: printed.agent.id, role: 'admin' });
    // In strict mode this admin is the way in: it may create agents and rooms.
    const agent = await api.post('/api/v1/agents', { name: uniqueName('a'), displayName: 'A', role: 'agent' }, { jwt: session.body.token });
    expect(agent.status).toBe(201);
    const room = await api.post('/rooms', { slug: uniqueName('r'), name: 'R' }, { jwt: session.body.token });
    expect(room.status).toBe(201);
  });

  it('works while a server runs on the same database, and honours --display-name', async () => {
    db = await createTestDatabase();
    server = await startTestServer({ db });
    const name = uniqueName('live');
    const res = await ams(db.url, 'admin', 'create', '--name', name, '--display-name', 'Live Admin');
    expect(res.code).toBe(0);
    const printed = JSON.parse(res.stdout) as AdminCreated;
    expect(printed.agent.displayName).toBe('Live Admin');
    const api = new Api(server.url);
    expect((await api.post('/api/v1/sessions', { apiToken: printed.token.token })).status).toBe(201);
    expect((await api.get('/api/v1/agents')).body).toContainEqual(printed.agent);
  });

  it('token issue --agent: a fresh token for an existing agent; refuses an unknown one', async () => {
    db = await createTestDatabase();
    const created = JSON.parse((await ams(db.url, 'admin', 'create', '--name', uniqueName('root'), '--create-database')).stdout) as AdminCreated;
    const issued = await ams(db.url, 'token', 'issue', '--agent', created.agent.id, '--expires-at', '2099-01-01T00:00:00Z');
    expect(issued.code).toBe(0);
    const token = JSON.parse(issued.stdout) as AdminCreated['token'];
    expect(token.expiresAt).toBe('2099-01-01T00:00:00.000Z');
    expect(token.prefix).not.toBe(created.token.prefix);
    server = await startTestServer({ db });
    expect((await new Api(server.url).post('/api/v1/sessions', { apiToken: token.token })).status).toBe(201);

    const unknown = await ams(db.url, 'token', 'issue', '--agent', '01900000-0000-7000-8000-000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('ams: Agent not found');
  });

  it('reports mistakes on one line with a non-zero exit code, and creates nothing', async () => {
    db = await createTestDatabase();
    const name = uniqueName('dup');
    expect((await ams(db.url, 'admin', 'create', '--name', name, '--create-database')).code).toBe(0);
    const duplicate = await ams(db.url, 'admin', 'create', '--name', name);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr.trim()).toBe(`ams: Agent name "${name}" already exists`);

    const invalid = await ams(db.url, 'admin', 'create', '--name', 'Not Valid');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toBe('ams: --name must match pattern ^[a-z0-9][a-z0-9-]{0,63}$\n');

    const missing = await ams(db.url, 'admin', 'create');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('ams: admin create needs --name <name> (ams --help for usage)\n');

    server = await startTestServer({ db });
    const agents = (await new Api(server.url).get('/api/v1/agents')).body as { name: string }[];
    expect(agents.map((a) => a.name)).toEqual([name]);
  });

  it('admin create refuses a missing SQLite database unless --create-database, and says which database it used', async () => {
    // SQLite whatever the suite's engine: a missing file is SQLite's case (PostgreSQL's database must exist).
    db = await createTestDatabase('sqlite');
    const elsewhere = mkdtempSync(join(tmpdir(), 'ams-cwd-'));
    try {
      // DATABASE_URL unset, from another folder, with AMS_URL set: as an operator would by mistake.
      const run = (...args: string[]) => new Promise<CliResult>((resolve) => {
        execFile(process.execPath, [join(ROOT, 'dist/cli/main.js'), ...args], { cwd: elsewhere, env: { PATH: process.env.PATH ?? '', AMS_URL: 'http://127.0.0.1:1' } }, (error, stdout, stderr) => {
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
        });
      });
      const refused = await run('admin', 'create', '--name', 'root');
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`ams: no database at ${join(elsewhere, 'data', 'ams.sqlite')}`);
      expect(refused.stderr).toContain('--create-database');
      expect(refused.stderr).toContain('not on the server at AMS_URL (http://127.0.0.1:1)');
      expect(existsSync(join(elsewhere, 'data'))).toBe(false);

      const dbPath = db.url.slice('sqlite:'.length);
      expect(existsSync(dbPath)).toBe(false);
      const tokenRefused = await ams(db.url, 'token', 'issue', '--agent', '01900000-0000-7000-8000-000000000000');
      expect(tokenRefused).toMatchObject({ code: 1, stdout: '' });
      expect(tokenRefused.stderr).toContain(`ams: no database at ${dbPath}`);
      expect(existsSync(dbPath)).toBe(false);

      const created = await ams(db.url, 'admin', 'create', '--name', uniqueName('root'), '--create-database');
      expect(created.code).toBe(0);
      expect(created.stderr).toBe(`ams: database: SQLite ${dbPath}\n`);
      // Now it exists: no option needed, and the same database is named.
      const again = await ams(db.url, 'admin', 'create', '--name', uniqueName('root'));
      expect(again).toMatchObject({ code: 0, stderr: `ams: database: SQLite ${dbPath}\n` });
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('usage: --help prints it (exit 0); a usage mistake is one `ams:` line on stderr and exit 2', async () => {
    db = await createTestDatabase();
    const help = await ams(db.url, '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('admin create --name <name>');
    expect(help.stdout).toContain('serve');
    const mistakes: [string[], string][] = [
      [['frobnicate'], 'unknown command "frobnicate"'],
      [['admin', 'create', '--nmae', 'x'], 'unknown option --nmae'],
      [['admin', 'create', '--name'], "Option '--name <value>' argument missing"],
      [['token', 'issue'], 'token issue needs --agent <agent-id>'],
      [['token', 'issue', '--agent', 'x', '--name', 'y'], 'token issue takes no --name'],
      [['serve', '--agent', 'x'], 'serve takes no --agent'],
    ];
    const results = await Promise.all(mistakes.map(([args]) => ams(db.url, ...args)));
    mistakes.forEach(([args, message], i) => {
      expect(results[i], args.join(' ')).toEqual({ code: 2, stdout: '', stderr: `ams: ${message} (ams --help for usage)\n` });
    });
  });

  it('--version prints the version of the package', async () => {
    db = await createTestDatabase();
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const res = await ams(db.url, '--version');
    expect(res).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('names the option the user typed in a validation error: --agent, --expires-at', async () => {
    db = await createTestDatabase();
    const created = JSON.parse((await ams(db.url, 'admin', 'create', '--name', uniqueName('root'), '--create-database')).stdout) as AdminCreated;
    const badId = await ams(db.url, 'token', 'issue', '--agent', 'nope');
    expect(badId).toEqual({ code: 1, stdout: '', stderr: 'ams: --agent must be a UUID\n' });
    const badDate = await ams(db.url, 'token', 'issue', '--agent', created.agent.id, '--expires-at', 'soon');
    expect(badDate.code).toBe(1);
    expect(badDate.stderr).toMatch(/^ams: --expires-at [^\n]+\n$/);
  });

  it('serve starts the server from the environment, as node dist/main.js does, and stops on SIGTERM', async () => {
    db = await createTestDatabase();
    const child = await startServerProcess({ DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET }, { name: 'ams serve', argv: [process.execPath, CLI_JS, 'serve'] });
    const api = new Api(child.url);
    expect((await api.get('/healthz')).status).toBe(200);
    const name = uniqueName('served');
    expect((await api.post('/api/v1/agents', { name, displayName: 'S', role: 'agent' })).status).toBe(201);
    expect((await child.kill('SIGTERM')).code).toBe(0);
    // The same database: the agent is there for the next process.
    server = await startTestServer({ db });
    expect(((await new Api(server.url).get('/api/v1/agents')).body as { name: string }[]).map((a) => a.name)).toContain(name);
  });

  it('serve with an invalid configuration fails as npm start does: one line, exit 1', async () => {
    // SQLite whatever the suite's engine: with PostgreSQL the missing JWT_SECRET would be reported instead.
    db = await createTestDatabase('sqlite');
    const res = await amsWithEnv({ DATABASE_URL: db.url, PORT: 'abc' }, 'serve');
    expect(res).toEqual({ code: 1, stdout: '', stderr: 'configuration error: PORT must be a whole number, got "abc"\n' });
  });

  it('npm run ams does not rebuild when dist/ is up to date', async () => {
    db = await createTestDatabase();
    const buildInfo = join(ROOT, 'dist', '.tsbuildinfo');
    const before = statSync(buildInfo).mtimeMs;
    // The script marks every build it runs on dist/.tsbuildinfo, so an unchanged time means no build.
    expect((await runProcess({ argv: [process.execPath, 'scripts/build-if-stale.js'], cwd: ROOT, env: process.env })).code).toBe(0);
    expect(statSync(buildInfo).mtimeMs).toBe(before);
  });

  it('a configuration error is one line naming the variable', async () => {
    db = await createTestDatabase();
    const res = await ams('mysql://nowhere', 'admin', 'create', '--name', 'x');
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe('ams: configuration error: DATABASE_URL must start with sqlite: or postgres://');
  });
});
