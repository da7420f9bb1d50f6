import { existsSync, mkdirSync, readdirSync, rmSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess } from './processes.js';
import { sleep } from './wait.js';

/** The repository root and the compiled entry points that process-level tests spawn. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const MAIN_JS = join(ROOT, 'dist', 'main.js');
export const CLI_JS = join(ROOT, 'dist', 'cli', 'main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** The workspace packages the server imports by name, built before it (`npm run build`'s order). */
export const PACKAGES = ['protocol', 'client'].map((name) => join(ROOT, 'packages', name));

// tsc rewrites only what changed, so compare the newest output with the newest source.
const isFresh = (dir: string): boolean => existsSync(join(dir, 'dist')) && newestMtime(join(dir, 'dist')) >= newestMtime(join(dir, 'src'));
const isBuilt = (): boolean => existsSync(MAIN_JS) && existsSync(CLI_JS) && [ROOT, ...PACKAGES].every(isFresh);

/**
 * Makes sure dist/ matches src/ (`npm test` builds first; a single file run with `npx vitest` may
 * not have). Test files run in parallel workers: one lock directory, shared by every caller, makes
 * only one compile and keeps others from spawning `node dist/...` while it rewrites dist/.
 */
export async function ensureBuilt(): Promise<void> {
  if (isBuilt()) return;
  const lock = join(tmpdir(), `ams-build-${Buffer.from(ROOT).toString('hex').slice(-32)}.lock`);
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (isBuilt()) return;
      // A lock left by a killed run is stale after two minutes (a build takes seconds).
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error('timed out waiting for another test worker to build dist/');
      await sleep(250); // polls the other worker's lock
    }
  }
  try {
    if (isBuilt()) return;
    for (const dir of [...PACKAGES, ROOT]) {
      // An incremental build trusts its .tsbuildinfo even when outputs were deleted.
      if (!existsSync(join(dir, 'dist', dir === ROOT ? 'main.js' : 'index.js'))) rmSync(join(dir, 'dist', '.tsbuildinfo'), { force: true });
      await runNode([join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.build.json')]);
    }
    // What tsc does not copy (the presence scripts), as `npm run build` does.
    await runNode([join(ROOT, 'scripts', 'copy-assets.js')]);
  } finally {
    rmdirSync(lock);
  }
}

export const CONSOLE_SOURCES = join(ROOT, 'console');
export const CONSOLE_INDEX = join(ROOT, 'dist', 'console', 'index.html');

/**
 * Makes sure dist/console/ matches console/ (the Vite half of `npm run build`), for a test file run
 * alone with `npx vitest`. Only the console's browser tests call it, one file at a time.
 */
export async function ensureConsoleBuilt(): Promise<void> {
  // The bundle holds the client library too.
  const newestSource = Math.max(newestMtime(CONSOLE_SOURCES), ...PACKAGES.map((dir) => newestMtime(join(dir, 'src'))));
  if (existsSync(CONSOLE_INDEX) && statSync(CONSOLE_INDEX).mtimeMs >= newestSource) return;
  await runNode([join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', join(CONSOLE_SOURCES, 'vite.config.ts')]);
}

/** `node <args>` in the repository with this process's environment; throws with its output unless it exits 0. */
async function runNode(args: string[]): Promise<void> {
  const { code, signal, stdout, stderr } = await runProcess({ argv: [process.execPath, ...args], cwd: ROOT, env: process.env, timeoutMs: 170_000 });
  if (code !== 0) throw new Error(`node ${args.join(' ')} failed (code ${code}, signal ${signal}):\n${stdout}${stderr}`);
}
