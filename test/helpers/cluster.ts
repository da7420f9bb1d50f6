import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createTestDatabase, REDIS_TEST_URL, TEST_JWT_SECRET, type TestDatabase } from './server.js';
import { waitUntil } from './services.js';
import { ensureBuilt, MAIN_JS as MAIN, ROOT } from './build.js';

/**
 * Multi-node harness: N separate `node dist/main.js` processes on their own ports, sharing one
 * PostgreSQL database and one Redis (under a key prefix of their own), configured only through
 * the environment as in production. Nodes can be killed (SIGKILL), stopped (SIGTERM) and
 * restarted on the same port.
 */

const LOG_LINES_KEPT = 300;




export { ensureBuilt };

export interface NodeExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NodeProcess {
  readonly name: string;
  /** The port the node listens on (kept across restarts). */
  readonly port: number;
  /** http://127.0.0.1:port */
  readonly url: string;
  readonly env: Readonly<Record<string, string>>;
  readonly pid: number | undefined;
  /** True while the process runs. */
  alive(): boolean;
  /** The last lines of its stdout and stderr (JSON log lines), for diagnostics. */
  logs(): string;
  /** Resolves when the process exits. */
  exited(): Promise<NodeExit>;
  /** Sends a signal and waits for the process to exit (SIGKILL by default). */
  kill(signal?: NodeJS.Signals): Promise<NodeExit>;
  /** SIGTERM: graceful shutdown. */
  stop(): Promise<NodeExit>;
  /** Starts it again with the same environment and port; waits for /readyz unless told not to. */
  restart(options?: { waitReady?: boolean }): Promise<void>;
  /** Polls GET /readyz until it answers 200. */
  waitReady(timeoutMs?: number): Promise<void>;
}

export interface StartNodeOptions {
  name?: string;
  /** Environment of the service (DATABASE_URL, REDIS_URL, JWT_SECRET, ...). PORT defaults to a free one. */
  env: Record<string, string>;
  /** Wait for /readyz 200 (default) or only for the listening log line. */
  waitReady?: boolean;
  readyTimeoutMs?: number;
}

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A crashed or interrupted test run must not leave servers behind.
  process.once('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
  });
}

/** Starts one service process and resolves once it listens (and, by default, is ready). */
export async function startNode(options: StartNodeOptions): Promise<NodeProcess> {
  await ensureBuilt();
  killAllOnExit();
  const name = options.name ?? `node-${randomBytes(2).toString('hex')}`;
  const env: Record<string, string> = { LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', ...options.env };
  let port = Number(env.PORT);
  let child: ChildProcess;
  let exit: Promise<NodeExit>;
  const lines: string[] = [];
  const keep = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line === '') continue;
      lines.push(line);
      if (lines.length > LOG_LINES_KEPT) lines.shift();
    }
  };

  const launch = async (): Promise<void> => {
    // Only what the service needs: no inherited DATABASE_URL or REDIS_URL from the test runner.
    const proc = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    liveChildren.add(proc);
    exit = new Promise<NodeExit>((resolveExit) => {
      proc.once('exit', (code, signal) => {
        liveChildren.delete(proc);
        resolveExit({ code, signal });
      });
    });
    let buffered = '';
    const listening = new Promise<number>((resolveListening, reject) => {
      proc.stdout?.on('data', (chunk: Buffer) => {
        keep(chunk);
        buffered += chunk.toString('utf8');
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          try {
            const entry = JSON.parse(line) as { msg?: string; url?: string };
            if (entry.msg === 'agent messaging service listening' && typeof entry.url === 'string') {
              resolveListening(Number(new URL(entry.url).port));
            }
          } catch {
            // not a JSON log line
          }
        }
      });
      proc.stderr?.on('data', keep);
      void exit.then(({ code, signal }) => reject(new Error(`${name} exited (code ${code}, signal ${signal}) before listening:\n${lines.join('\n')}`)));
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} did not listen within 60 s:\n${lines.join('\n')}`)), 60_000);
    });
    try {
      port = await Promise.race([listening, timeout]);
    } catch (err) {
      proc.kill('SIGKILL');
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };

  const node: NodeProcess = {
    name,
    get port() {
      return port;
    },
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    env,
    get pid() {
      return child.pid;
    },
    alive: () => child.exitCode === null && child.signalCode === null,
    logs: () => lines.join('\n'),
    exited: () => exit,
    async kill(signal = 'SIGKILL') {
      if (node.alive()) child.kill(signal);
      return exit;
    },
    stop: () => node.kill('SIGTERM'),
    async restart({ waitReady = true } = {}) {
      if (node.alive()) await node.kill('SIGKILL');
      await launch();
      if (waitReady) await node.waitReady(options.readyTimeoutMs);
    },
    async waitReady(timeoutMs = 30_000) {
      await waitUntil(`${name} /readyz`, async () => (await fetch(`${node.url}/readyz`)).status === 200, timeoutMs).catch((err: Error) => {
        throw new Error(`${err.message}\n${lines.join('\n')}`);
      });
    },
  };

  await launch();
  if (options.waitReady !== false) await node.waitReady(options.readyTimeoutMs);
  return node;
}

export interface Cluster {
  nodes: NodeProcess[];
  /** The shared PostgreSQL database (dropped by close unless it was passed in). */
  database: TestDatabase;
  redisUrl: string;
  /** The environment every node got. */
  env: Readonly<Record<string, string>>;
  /** Starts one more node with the same environment (closed with the cluster). */
  addNode(options?: { name?: string; env?: Record<string, string>; waitReady?: boolean }): Promise<NodeProcess>;
  /** This cluster's REDIS_KEY_PREFIX: unique, so parallel runs sharing one Redis never collide. */
  redisKeyPrefix: string;
  /** Kills every node, deletes this cluster's Redis keys and drops the database it created. */
  close(): Promise<void>;
}

export interface StartClusterOptions {
  nodes?: number;
  /** Extra environment for every node (e.g. small RATE_LIMIT_AGENT_PER_MINUTE). */
  env?: Record<string, string>;
  /** An existing database; by default a fresh PostgreSQL database is created. */
  database?: TestDatabase;
  redisUrl?: string;
}

/** Deletes the keys under one prefix (SCAN, never FLUSHALL: other runs share this Redis). */
export async function deleteRedisKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * N nodes started at the same moment on one fresh PostgreSQL database (so they also race on the
 * startup migrations) and one Redis.
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<Cluster> {
  const database = options.database ?? (await createTestDatabase('postgres'));
  const redisUrl = options.redisUrl ?? REDIS_TEST_URL;
  const redisKeyPrefix = `ams-test-${randomBytes(5).toString('hex')}:`;
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: redisKeyPrefix,
    JWT_SECRET: TEST_JWT_SECRET,
    DB_POOL_MAX: '5',
    ...options.env,
  };
  const started = await Promise.allSettled(
    Array.from({ length: options.nodes ?? 2 }, (_, i) => startNode({ name: `node-${String.fromCharCode(65 + i)}`, env })),
  );
  const nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const close = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
    await deleteRedisKeys(redisUrl, redisKeyPrefix).catch(() => undefined);
    if (!options.database) await database.drop();
  };
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await close();
    throw failed.reason;
  }
  const addNode = async (extra: { name?: string; env?: Record<string, string>; waitReady?: boolean } = {}): Promise<NodeProcess> => {
    const node = await startNode({
      name: extra.name ?? `node-${String.fromCharCode(65 + nodes.length)}`,
      env: { ...env, ...extra.env },
      waitReady: extra.waitReady,
    });
    nodes.push(node);
    return node;
  };
  return { nodes, database, redisUrl, env, redisKeyPrefix, addNode, close };
}
