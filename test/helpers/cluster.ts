import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createTestDatabase, REDIS_TEST_URL, startServerProcess, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from './server.js';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from './services.js';
import { waitUntil } from './wait.js';

/**
 * Multi-node harness: N separate `node dist/main.js` processes on their own ports, sharing one
 * PostgreSQL database and one Redis (under a key prefix of their own), configured only through
 * the environment as in production. Nodes can be killed (SIGKILL), stopped (SIGTERM) and
 * restarted on the same port.
 */

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

const exitOf = ({ code, signal }: NodeExit): NodeExit => ({ code, signal });

/** Starts one service process and resolves once it listens (and, by default, is ready). */
export async function startNode(options: StartNodeOptions): Promise<NodeProcess> {
  const name = options.name ?? `node-${randomBytes(2).toString('hex')}`;
  const env: Record<string, string> = { LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', ...options.env };
  let port = Number(env.PORT);
  // The port of the first start is kept, so a restarted node is found at the same URL.
  const launch = async (): Promise<StartedServer> => {
    const started = await startServerProcess({ ...env, PORT: String(port) }, { name });
    port = Number(new URL(started.url).port);
    return started;
  };
  let current = await launch();

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
      return current.pid;
    },
    alive: () => current.alive(),
    logs: () => current.output(),
    exited: async () => exitOf(await current.exit),
    kill: async (signal = 'SIGKILL') => exitOf(await current.kill(signal)),
    stop: async () => exitOf(await current.kill('SIGTERM')),
    async restart({ waitReady = true } = {}) {
      await current.kill('SIGKILL');
      current = await launch();
      if (waitReady) await node.waitReady(options.readyTimeoutMs);
    },
    async waitReady(timeoutMs = 30_000) {
      await waitUntil(`${name} /readyz`, async () => (await fetch(`${node.url}/readyz`)).status === 200, timeoutMs, 100).catch((err: Error) => {
        throw new Error(`${err.message}\n${current.output()}`);
      });
    },
  };
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

export interface PrivateCluster extends Cluster {
  /** The cluster's own PostgreSQL and Redis, which a test may stop, kill and restart. */
  postgres: PrivatePostgres;
  redis: PrivateRedis;
}

/** startCluster on a PostgreSQL and a Redis of its own (fault tests); close destroys them too. */
export async function startPrivateCluster(options: Omit<StartClusterOptions, 'database' | 'redisUrl'> = {}): Promise<PrivateCluster> {
  const [postgres, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()]);
  const destroy = async (): Promise<void> => {
    await Promise.all([postgres.destroy(), redis.destroy()]);
  };
  let cluster: Cluster;
  try {
    // The private cluster is destroyed whole: no database of its own to drop.
    cluster = await startCluster({ ...options, database: { url: postgres.url, drop: () => Promise.resolve() }, redisUrl: redis.url });
  } catch (err) {
    await destroy();
    throw err;
  }
  return {
    ...cluster,
    postgres,
    redis,
    async close() {
      await cluster.close();
      await destroy();
    },
  };
}
