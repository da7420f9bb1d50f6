import { spawn } from 'node:child_process';

/**
 * Child processes that tests and the bench start (the service, bench baselines, probes): their
 * output kept line by line, JSON log lines awaited, and every one still running killed when this
 * process exits, so that an interrupted run leaves no server behind.
 *
 * Plain JavaScript with a .d.ts beside it: the bench runs on Node without a build step, the tests
 * import it like any TypeScript module.
 */

const live = new Set();
let exitHookInstalled = false;

function killOnExit(child) {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of live) c.kill('SIGKILL');
  });
}

function parseJson(line) {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/**
 * Starts `argv[0]` with the rest of `argv` and exactly `env`. Keeps the last `keepLines` lines of
 * stdout and stderr; `exit` resolves once the process has ended and all its output was read.
 * @param {import('./processes.js').SpawnOptions} options
 * @returns {import('./processes.js').SpawnedProcess}
 */
export function spawnProcess({ name = 'process', argv, env, cwd = process.cwd(), keepLines = 1000 }) {
  const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  const kept = [];
  const seen = [];
  const waiters = new Set();
  const pending = { stdout: '', stderr: '' };

  const keep = (stream, line) => {
    kept.push({ stream, line });
    if (kept.length > keepLines) kept.shift();
    const entry = stream === 'stdout' ? parseJson(line) : undefined;
    if (entry === undefined) return;
    seen.push(entry);
    if (seen.length > keepLines) seen.shift();
    for (const waiter of waiters) if (waiter.predicate(entry)) waiter.resolve(entry);
  };
  const reader = (stream) => (chunk) => {
    const lines = (pending[stream] + chunk.toString('utf8')).split('\n');
    pending[stream] = lines.pop();
    for (const line of lines) if (line !== '') keep(stream, line);
  };
  child.stdout.on('data', reader('stdout'));
  child.stderr.on('data', reader('stderr'));

  const output = (stream) => kept.filter((k) => stream === undefined || k.stream === stream).map((k) => k.line).join('\n');
  // 'close', not 'exit': only then has all of the child's output been read.
  const exit = new Promise((resolve) => {
    child.once('close', (code, signal) => {
      for (const stream of ['stdout', 'stderr']) if (pending[stream] !== '') keep(stream, pending[stream]);
      resolve({ code, signal, stdout: output('stdout'), stderr: output('stderr') });
    });
  });

  const spawned = {
    name,
    child,
    get pid() {
      return child.pid;
    },
    exit,
    alive: () => child.exitCode === null && child.signalCode === null,
    output,
    waitForLog(predicate, timeoutMs = 60_000) {
      const found = seen.find(predicate);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = {
          predicate,
          resolve: (entry) => {
            finish();
            resolve(entry);
          },
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${name}: no matching log line within ${timeoutMs} ms:\n${output()}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(waiter);
        };
        waiters.add(waiter);
        void exit.then(({ code, signal }) => {
          if (!waiters.has(waiter)) return;
          finish();
          reject(new Error(`${name} exited (code ${code}, signal ${signal}) before the expected log line:\n${output()}`));
        });
      });
    },
    async kill(signal = 'SIGKILL') {
      if (spawned.alive()) child.kill(signal);
      return exit;
    },
    async stop(graceMs = 10_000) {
      if (!spawned.alive()) return exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exit;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  return spawned;
}

/**
 * Runs `argv` to its end with exactly `env` and resolves with its exit code and its whole output,
 * byte for byte (for commands whose exact output a test compares, such as the CLI). Killed (and
 * rejected) after `timeoutMs`; killed with this process too.
 * @param {import('./processes.js').RunOptions} options
 * @returns {Promise<import('./processes.js').RunResult>}
 */
export function runProcess({ argv, env, cwd = process.cwd(), timeoutMs = 120_000 }) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    killOnExit(child);
    const out = { stdout: [], stderr: [] };
    child.stdout.on('data', (chunk) => out.stdout.push(chunk));
    child.stderr.on('data', (chunk) => out.stderr.push(chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${argv.join(' ')}: still running after ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out.stdout).toString('utf8'), stderr: Buffer.concat(out.stderr).toString('utf8') });
    });
  });
}
