import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../helpers/build.js';

const run = promisify(execFile);

describe('what the repository ships and what git keeps out', () => {
  beforeAll(ensureBuilt, 180_000);

  it('npm pack ships the built service, its docs and examples; no sources, tests, data or secrets', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, timeout: 60_000 });
    const [pack] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const files = pack.files.map((f) => f.path);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    for (const needed of ['package.json', 'README.md', 'dist/main.js', 'dist/serve.js', 'docs/reliability.md', 'examples/walkthrough.sh', ...Object.values(pkg.bin)]) {
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
