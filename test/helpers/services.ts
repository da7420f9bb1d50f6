import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { PG_ADMIN_URL, REDIS_TEST_URL } from './server.js';
import { waitUntil } from './wait.js';

/**
 * The external services some tests need: the machine's PostgreSQL and Redis (shared with other
 * test runs: never stop them, never flush Redis), and private throwaway instances for fault tests
 * (a PostgreSQL cluster made with initdb, a redis-server) that a test may stop, kill and restart.
 *
 * Absent services make those tests skip with a visible message, except with
 * AMS_REQUIRE_SERVICES=1 (CI), where a missing service fails the file.
 */

const run = promisify(execFile);

export const REQUIRE_SERVICES = process.env.AMS_REQUIRE_SERVICES === '1';

export type Service = 'postgres' | 'redis' | 'postgres-binaries' | 'redis-server' | 'chromium';

/** Debian's chromium, which the console's browser tests drive (`.ci/run` installs it). */
export const CHROMIUM_PATH = process.env.AMS_CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A free TCP port on 127.0.0.1 (released before returning; a tiny race we accept in tests). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

export async function postgresReachable(url = PG_ADMIN_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Sends a raw PING; true on +PONG. Avoids a client library's reconnect machinery for a probe. */
export async function redisReachable(url = REDIS_TEST_URL, timeoutMs = 1000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise<boolean>((resolve) => {
    const socket = new Socket();
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
    socket.connect(Number(port || 6379), hostname || '127.0.0.1', () => socket.write('PING\r\n'));
  });
}

/** The bin directory of the newest PostgreSQL installed under /usr/lib/postgresql, or null. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0]!, 'bin') : null;
}

async function onPath(command: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

const probes: Record<Service, () => Promise<boolean>> = {
  postgres: () => postgresReachable(),
  redis: () => redisReachable(),
  'postgres-binaries': () => Promise.resolve(postgresBinDir() !== null),
  'redis-server': () => onPath('redis-server'),
  chromium: () => Promise.resolve(existsSync(CHROMIUM_PATH)),
};

/**
 * For a test file's top level: whether every service it needs is there. When one is not, prints
 * a visible skip notice and returns false (use with `describe.skipIf(!ok)`), or throws when
 * AMS_REQUIRE_SERVICES=1 so CI fails instead of skipping.
 */
export async function servicesAvailable(suite: string, needs: Service[]): Promise<boolean> {
  const missing: Service[] = [];
  for (const service of needs) if (!(await probes[service]())) missing.push(service);
  if (missing.length === 0) return true;
  const where = `(PostgreSQL at ${PG_ADMIN_URL}, Redis at ${REDIS_TEST_URL}, chromium at ${CHROMIUM_PATH})`;
  if (REQUIRE_SERVICES) {
    throw new Error(`${suite}: required service(s) missing: ${missing.join(', ')} ${where}; AMS_REQUIRE_SERVICES=1 makes this a failure`);
  }
  console.warn(`\n[SKIPPED] ${suite}: service(s) not available: ${missing.join(', ')} ${where}. Set AMS_REQUIRE_SERVICES=1 to make this a failure.\n`);
  return false;
}

// --- private PostgreSQL -------------------------------------------------------------------------

export interface PrivatePostgres {
  port: number;
  /** Superuser URL of the cluster's `postgres` database. */
  url: string;
  /** URL of another database of this cluster. */
  urlFor(database: string): string;
  /** `fast` disconnects clients and shuts down cleanly; `immediate` is a crash-like stop. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP to the server and all its backends: connections stay open, nothing answers. */
  freeze(): Promise<void>;
  /** SIGCONT after freeze. */
  thaw(): Promise<void>;
  /** Runs one statement as superuser on the `postgres` database. */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<T[]>;
  /** Stops the cluster and deletes its files. */
  destroy(): Promise<void>;
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** initdb and postgres refuse to run as root: then run them as the `postgres` OS user. */
function asPostgresUser(bin: string, args: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

async function pgTool(bin: string, args: string[]): Promise<void> {
  const [command, argv] = asPostgresUser(bin, args);
  try {
    await run(command, argv, { timeout: 60_000 });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
  }
}

/**
 * A throwaway PostgreSQL cluster on a random port in a temp directory, trust authentication,
 * fsync off (tests only). Its socket directory is the data directory, so it never touches the
 * machine's cluster.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (bin === null) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  const dir = mkdtempSync(join(tmpdir(), 'ams-pg-'));
  const data = join(dir, 'data');
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const port = await freePort();
  await pgTool(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c full_page_writes=off -c max_connections=60`;
  const pgCtl = (args: string[]): Promise<void> => pgTool(join(bin, 'pg_ctl'), ['-D', data, ...args]);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  // The postmaster's pid is the first line of postmaster.pid; its children are the backends.
  const signalCluster = async (signal: NodeJS.Signals): Promise<void> => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const { stdout } = await run('pgrep', ['-P', String(postmaster)]).catch(() => ({ stdout: '' }));
    const pids = [postmaster, ...stdout.split(/\s+/).filter((p) => p !== '').map(Number)];
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  };

  const instance: PrivatePostgres = {
    port,
    url,
    urlFor: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      await pgCtl(['-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
      await waitUntil('private PostgreSQL to accept connections', () => postgresReachable(url), 15_000, 100);
    },
    async freeze() {
      await signalCluster('SIGSTOP');
    },
    async thaw() {
      await signalCluster('SIGCONT');
    },
    async stop(mode = 'fast') {
      await pgCtl(['-m', mode, '-w', '-t', '30', 'stop']);
    },
    async query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
      client.on('error', () => undefined);
      await client.connect();
      try {
        return (await client.query<T>(text, values)).rows;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    async destroy() {
      await signalCluster('SIGCONT').catch(() => undefined);
      await pgCtl(['-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await instance.start();
  return instance;
}

// --- private Redis ------------------------------------------------------------------------------

export interface PrivateRedis {
  port: number;
  url: string;
  /** Kills the server (SIGKILL by default); SIGSTOP freezes it (connections stay open, nothing answers). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Resumes a server frozen with SIGSTOP. */
  resume(): void;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** A redis-server of our own on a random port: no persistence, killed with the test. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const onExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.once('exit', onExit);

  const instance: PrivateRedis = {
    port,
    url,
    async start() {
      const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      child = proc;
      await waitUntil('private Redis to answer PING', () => redisReachable(url), 10_000, 50);
    },
    async kill(signal = 'SIGKILL') {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      if (signal === 'SIGSTOP') {
        proc.kill('SIGSTOP');
        return;
      }
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGCONT');
      proc.kill(signal);
      await exited;
      child = null;
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async destroy() {
      await instance.kill('SIGKILL');
      process.off('exit', onExit);
    },
  };
  await instance.start();
  return instance;
}
