import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmdirSync, statSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const ROOT = resolve(import.meta.dirname, '../../..');
export const MAIN_JS = join(ROOT, 'dist/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds dist/ unless it is newer than every source file (`npm test` has just built it). Test
 * files run in parallel workers, so the build is serialised with a lock directory: a worker never
 * starts `node dist/main.js` while another one is rewriting dist/.
 */
export async function ensureBuilt(): Promise<void> {
  const lock = join(ROOT, '.build-lock');
  for (let waited = 0; ; waited += 100) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock left by a killed test run is stale after a few minutes (a build takes seconds).
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 300_000) rmdirSync(lock);
      if (waited > 120_000) throw new Error(`could not take ${lock}; remove it if no build is running`);
      await sleep(100);
    }
  }
  try {
    const stamp = join(ROOT, 'dist/.tsbuildinfo');
    if (!existsSync(MAIN_JS) || !existsSync(stamp) || statSync(stamp).mtimeMs < newestMtime(join(ROOT, 'src'))) {
      execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
    }
  } finally {
    rmdirSync(lock);
  }
}

export interface ChildServer {
  process: ChildProcess;
  url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code or signal once the process has ended. */
  exited: Promise<number | string>;
}

/**
 * Runs `node dist/main.js` (the real entry point) with the given environment, and resolves once it
 * logs that it is listening. `command` lets a test wrap it (e.g. in unshare).
 */
export async function startChildServer(env: Record<string, string>, command: string[] = [process.execPath, MAIN_JS]): Promise<ChildServer> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | string>((resolveExit) => child.once('exit', (code, signal) => resolveExit(code ?? signal ?? 'unknown')));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });
  return { process: child, url, output: () => output, exited };
}
