import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newRoom } from '../helpers/api.js';
import { ensureBuilt, ROOT } from '../helpers/build.js';
import { useTestServer } from '../helpers/suite.js';

const run = promisify(execFile);

describe('what the repository ships and what git keeps out', () => {
  beforeAll(ensureBuilt, 180_000);

  it('npm pack ships the built service, its docs and examples; no sources, tests, data or secrets', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, timeout: 60_000 });
    const [pack] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const files = pack.files.map((f) => f.path);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    for (const needed of ['package.json', 'README.md', 'dist/main.js', 'dist/serve.js', 'dist/client/index.js', 'dist/client/index.d.ts', 'docs/reliability.md', 'docs/client.md', 'examples/walkthrough.sh', ...Object.values(pkg.bin)]) {
      expect(files, needed).toContain(needed);
    }
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

describe('the packed package, unpacked in an empty folder', () => {
  const t = useTestServer();
  let folder: string;
  const pkgDir = (): string => join(folder, 'node_modules', 'agent-messaging-service');

  // `npm install <tarball>` would fetch the dependencies from the registry; offline, the tarball is
  // unpacked where npm would put it and the dependencies are the repository's installed ones.
  beforeAll(async () => {
    await ensureBuilt();
    folder = mkdtempSync(join(tmpdir(), 'ams-pack-'));
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', folder], { cwd: ROOT, timeout: 60_000 });
    const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
    mkdirSync(pkgDir(), { recursive: true });
    await run('tar', ['-xzf', join(folder, filename), '-C', pkgDir(), '--strip-components=1']);
    const pkg = JSON.parse(readFileSync(join(pkgDir(), 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const dependency of Object.keys(pkg.dependencies)) {
      const link = join(folder, 'node_modules', dependency);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', dependency), link);
    }
    return () => rmSync(folder, { recursive: true, force: true });
  }, 180_000);

  it('runs ams from the package', async () => {
    const { stdout } = await run(process.execPath, [join(pkgDir(), 'dist', 'cli', 'main.js'), '--help'], { cwd: folder });
    expect(stdout).toContain('tail ROOM');
  });

  it('agent-messaging-service/client imports by its package name, with types, and talks to the service', async () => {
    const pkg = JSON.parse(readFileSync(join(pkgDir(), 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> };
    expect(readdirSync(join(pkgDir(), 'dist', 'client'))).toContain(pkg.exports['./client']!.types.replace('./dist/client/', ''));
    // What a browser bundle of it pulls in: socket.io-client and its own files, nothing of the server.
    const specifiers = readdirSync(join(pkgDir(), 'dist', 'client')).filter((f) => f.endsWith('.js'))
      .flatMap((f) => [...readFileSync(join(pkgDir(), 'dist', 'client', f), 'utf8').matchAll(/^(?:import|export)\b[^'"\n]*?(?:from\s*)?['"]([^'"]+)['"];?$/gm)].map((m) => m[1]!));
    expect([...new Set(specifiers.filter((s) => !s.startsWith('./')))]).toEqual(['socket.io-client']);

    const admin = await newAdmin(t.api);
    const room = await newRoom(t.api, admin);
    const script = `
      import { AmsClient, AmsError } from 'agent-messaging-service/client';
      const client = new AmsClient({ url: process.env.AMS_URL, apiToken: process.env.AMS_API_TOKEN });
      await client.connect();
      const sent = await client.send(process.env.ROOM, 'from the packed client');
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
});
