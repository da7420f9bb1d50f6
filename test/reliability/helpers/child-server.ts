import { spawn, type ChildProcess } from 'node:child_process';
import { MAIN_JS, ROOT } from '../../helpers/build.js';

export { MAIN_JS, ROOT };



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
