import { CLI_JS, ROOT } from './build.js';
import { runProcess } from './processes.js';

/** What an `ams` run gave: its exit code (-1 when a signal ended it) and its exact output. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The suite's one `ams` runner: `node dist/cli/main.js <args>` in the repository, with exactly `env`
 * plus PATH (no stray DATABASE_URL, AMS_URL or token from the runner), stdin closed. Call
 * ensureBuilt() first (in a beforeAll).
 */
export async function runAms(env: Record<string, string | undefined>, ...args: string[]): Promise<CliResult> {
  return runAmsIn(ROOT, env, ...args);
}

/** `ams` run in another folder (what it writes by default lands there). */
export async function runAmsIn(cwd: string, env: Record<string, string | undefined>, ...args: string[]): Promise<CliResult> {
  const { code, stdout, stderr } = await runProcess({ argv: [process.execPath, CLI_JS, ...args], cwd, env: { PATH: process.env.PATH ?? '', ...env } });
  return { code: code ?? -1, stdout, stderr };
}
