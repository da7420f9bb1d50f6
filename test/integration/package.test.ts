import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { build } from 'vite';
import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newRoom } from '../helpers/api.js';
import { ensureBuilt, PACKAGES, ROOT } from '../helpers/build.js';
import { useTestServer } from '../helpers/suite.js';

const run = promisify(execFile);

/** What a client must never install: the server's own dependencies (and the server itself). */
const SERVER_ONLY = ['agent-messaging-service', 'fastify', 'pg', 'ioredis', 'better-sqlite3', '@node-rs/argon2', 'kysely', 'socket.io', 'pino', 'prom-client'];

/** `npm pack` of one folder into `destination`; the tarball's path. */
async function pack(dir: string, destination: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], { cwd: dir, timeout: 60_000 });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  return join(destination, filename);
}

describe('what the repository ships and what git keeps out', () => {
  beforeAll(ensureBuilt, 180_000);

  it('npm pack ships the built service, its docs and examples; no sources, tests, data or secrets', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, timeout: 60_000 });
    const [pack] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const files = pack.files.map((f) => f.path);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    for (const needed of ['package.json', 'README.md', 'dist/main.js', 'dist/serve.js', 'docs/reliability.md', 'docs/client.md', 'examples/walkthrough.sh', ...Object.values(pkg.bin)]) {
      expect(files, needed).toContain(needed);
    }
    // The client library is a package of its own (packages/client), not a part of the server's.
    expect(files.filter((f) => f.startsWith('dist/client/') || f.startsWith('packages/'))).toEqual([]);
    const unwanted = files.filter((f) => /^(src|test|bench|data|scripts|\.ci)\//.test(f) || /\.(sqlite|tsbuildinfo|map|log|tgz)$|(^|\/)\.env|admin\.json$/.test(f));
    expect(unwanted).toEqual([]);
  }, 90_000);

  it('git ignores secrets and data: API tokens printed by ams, environment files, keys, the database', async () => {
    const candidates = ['admin.json', 'alice-token.json', '.env', '.env.production', 'server.key', 'tls.pem', 'data/ams.sqlite', 'ams.sqlite-wal', 'node-a.log'];
    // check-ignore prints each ignored path; --no-index judges paths whether or not they exist.
    const { stdout } = await run('git', ['check-ignore', '--no-index', ...candidates], { cwd: ROOT });
    expect(stdout.trim().split('\n').sort()).toEqual([...candidates].sort());
  });
});

describe('the client package, installed from its tarball into an empty folder as a user installs it', () => {
  const t = useTestServer();
  let folder: string;
  const installed = (...path: string[]): string => join(folder, 'node_modules', ...path);

  // `npm install` of the two tarballs (the client and the protocol it takes its types from), the
  // rest from the registry or npm's cache, exactly what a user of the client gets.
  beforeAll(async () => {
    await ensureBuilt();
    folder = mkdtempSync(join(tmpdir(), 'ams-client-pack-'));
    const tarballs = [];
    for (const dir of PACKAGES) tarballs.push(await pack(dir, folder));
    writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'a-user-project', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs], { cwd: folder, timeout: 170_000 });
    return () => rmSync(folder, { recursive: true, force: true });
  }, 180_000);

  it('installs no server dependency', () => {
    expect(existsSync(installed('@agent-messaging', 'client', 'dist', 'index.js'))).toBe(true);
    const present = SERVER_ONLY.filter((name) => existsSync(installed(name)));
    expect(present).toEqual([]);
    const pkg = JSON.parse(readFileSync(installed('@agent-messaging', 'client', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['@agent-messaging/protocol', '@modelcontextprotocol/sdk', 'mime-types', 'socket.io-client']);
  });

  it('imports by its package name in Node.js, with types, and talks to the service', async () => {
    expect(readdirSync(installed('@agent-messaging', 'client', 'dist'))).toContain('index.d.ts');
    const admin = await newAdmin(t.api);
    const room = await newRoom(t.api, admin);
    const script = `
      import { AmsClient, AmsError } from '@agent-messaging/client';
      const client = new AmsClient({ url: process.env.AMS_URL, apiToken: process.env.AMS_API_TOKEN });
      await client.connect();
      const sent = await client.send(process.env.ROOM, 'from the installed client');
      const refused = await client.send(process.env.ROOM, '').catch((err) => err);
      console.log(JSON.stringify({ seq: sent.seq, isAmsError: refused instanceof AmsError, code: refused.code }));
      await client.close();
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: folder,
      env: { PATH: process.env.PATH ?? '', AMS_URL: t.server.url, AMS_API_TOKEN: admin.apiToken, ROOM: room.id },
      timeout: 60_000,
    });
    expect(JSON.parse(stdout)).toEqual({ seq: 1, isAmsError: true, code: 'VALIDATION_ERROR' });
  }, 90_000);

  it('bundles for a browser: the library, socket.io-client and no Node.js module or server code', async () => {
    writeFileSync(join(folder, 'entry.js'), "export { AmsClient } from '@agent-messaging/client';\n");
    const output = await build({
      root: folder, configFile: false, logLevel: 'silent',
      build: { write: false, lib: { entry: join(folder, 'entry.js'), formats: ['es'], fileName: 'bundle' }, minify: false },
    });
    const [result] = (Array.isArray(output) ? output : [output]) as { output: { type: string; code?: string; moduleIds?: string[] }[] }[];
    const chunk = result!.output.find((o) => o.type === 'chunk')!;
    const modules = chunk.moduleIds ?? [];
    expect(modules.some((id) => id.includes('socket.io-client'))).toBe(true);
    expect(modules.filter((id) => /node:|@agent-messaging[\\/]protocol|typebox|fastify/.test(id))).toEqual([]);
    expect(chunk.code).toContain('class AmsClient');
  }, 90_000);

  it('its ams runs the client commands and ams mcp, and has no database commands', async () => {
    const ams = installed('.bin', 'ams');
    const { stdout } = await run(ams, ['--help'], { cwd: folder });
    expect(stdout).toContain('tail ROOM');
    expect(stdout).not.toContain('admin create');

    const admin = await newAdmin(t.api);
    const transport = new StdioClientTransport({ command: ams, args: ['mcp'], cwd: folder, env: { PATH: process.env.PATH ?? '', AMS_URL: t.server.url, AMS_API_TOKEN: admin.apiToken } });
    const client = new Client({ name: 'package-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('send_message');
    } finally {
      await client.close();
    }
  }, 90_000);
});

describe('the service installed as a dependency, as a user installs it: both import paths of the client library', () => {
  const t = useTestServer();
  let folder: string;

  // The three tarballs (the service, the client, the protocol) into an empty project. Install
  // scripts are skipped: they build the server's native modules (SQLite, Argon2), which importing
  // the client never loads.
  beforeAll(async () => {
    await ensureBuilt();
    folder = mkdtempSync(join(tmpdir(), 'ams-service-pack-'));
    const tarballs = [await pack(ROOT, folder)];
    for (const dir of PACKAGES) tarballs.push(await pack(dir, folder));
    writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'a-user-project', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], { cwd: folder, timeout: 290_000 });
    return () => rmSync(folder, { recursive: true, force: true });
  }, 300_000);

  it('imports agent-messaging-service/client (the published path) and @agent-messaging/client: the same classes, and it talks to the service', async () => {
    const admin = await newAdmin(t.api);
    const room = await newRoom(t.api, admin);
    const script = `
      import * as published from 'agent-messaging-service/client';
      import * as client from '@agent-messaging/client';
      const ams = new published.AmsClient({ url: process.env.AMS_URL, apiToken: process.env.AMS_API_TOKEN });
      const sent = await ams.send(process.env.ROOM, 'by the published path');
      await ams.close();
      console.log(JSON.stringify({ exports: Object.keys(published).sort(), same: Object.keys(client).every((name) => published[name] === client[name]), seq: sent.seq }));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: folder,
      env: { PATH: process.env.PATH ?? '', AMS_URL: t.server.url, AMS_API_TOKEN: admin.apiToken, ROOM: room.id },
      timeout: 60_000,
    });
    expect(JSON.parse(stdout)).toEqual({ exports: ['AmsClient', 'AmsError', 'leaseConflicts'], same: true, seq: 1 });
  }, 90_000);

  it('has the library\'s types under both paths (TypeScript resolves them, and refuses a wrong call)', async () => {
    writeFileSync(join(folder, 'typed.ts'), [
      "import { AmsClient, type Message } from 'agent-messaging-service/client';",
      "import { AmsError } from '@agent-messaging/client';",
      "const client: AmsClient = new AmsClient({ url: 'http://127.0.0.1:3000', apiToken: 'agt_x' });",
      "export const seqOf = async (room: string): Promise<number> => ((await client.send(room, 'typed')) satisfies Message).seq;",
      'export const isAmsError = (err: unknown): boolean => err instanceof AmsError;',
      '// @ts-expect-error: url must be a string',
      "export const wrong = new AmsClient({ url: 1, apiToken: 'agt_x' });",
    ].join('\n'));
    const compilerOptions = { noEmit: true, strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types: [], skipLibCheck: true };
    writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['typed.ts'] }));
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: folder, timeout: 120_000 }).then(() => ({ stdout: '' }), (err: { stdout: string }) => ({ stdout: err.stdout }));
    expect(result.stdout).toBe('');
  }, 150_000);
});
