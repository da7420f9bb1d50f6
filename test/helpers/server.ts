import { randomBytes } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { startApp, type RunningApp } from '../../src/app.js';
import type { ContextOverrides } from '../../src/context.js';
import type { Config } from '../../src/config/config.js';
import { ensureBuilt, MAIN_JS, ROOT } from './build.js';
import { testConfig } from './config.js';
import { createPostgresDatabase, createSqliteDatabase } from './databases.js';
import { spawnProcess, type SpawnedProcess } from './processes.js';

/**
 * The one server harness of the suite: the real server in process (startTestServer), or the built
 * entry point as a child process configured through its environment as in production
 * (spawnServer, startServerProcess; cluster.ts runs several of those).
 */

/**
 * The storage the integration suite runs on: SQLite by default, PostgreSQL when
 * AMS_TEST_DATABASE=postgres (then each server gets a fresh database, dropped on close).
 */
export const TEST_DIALECT: 'sqlite' | 'postgres' = process.env.AMS_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';
export const PG_ADMIN_URL = process.env.AMS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_TEST_URL = process.env.AMS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_JWT_SECRET = 'test-secret-test-secret-test-secret-0123456789';
/**
 * REDIS_KEY_PREFIX of the servers of one test file: shared by them (two in-process servers on one
 * Redis see each other), distinct from every other file and run using the machine's Redis.
 */
export const TEST_REDIS_KEY_PREFIX = `ams-test-${randomBytes(5).toString('hex')}:`;

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh, empty database of the suite's dialect (or of the one asked for). */
export async function createTestDatabase(dialect: 'sqlite' | 'postgres' = TEST_DIALECT): Promise<TestDatabase> {
  return dialect === 'sqlite' ? createSqliteDatabase('ams-test') : createPostgresDatabase(PG_ADMIN_URL, 'ams_test');
}

export function configFor(databaseUrl: string, overrides: Partial<Config> = {}): Config {
  const base = testConfig();
  const database: Config['database'] = databaseUrl.startsWith('sqlite:')
    ? { kind: 'sqlite', path: databaseUrl.slice('sqlite:'.length) }
    : { kind: 'postgres', url: databaseUrl, poolMax: 5 };
  return {
    ...base,
    database,
    jwtSecret: database.kind === 'postgres' ? TEST_JWT_SECRET : base.jwtSecret,
    redisKeyPrefix: TEST_REDIS_KEY_PREFIX,
    ...overrides,
  };
}

export interface TestServer {
  app: RunningApp;
  url: string;
  db: TestDatabase;
  /** Closes the server; drops the database unless keepDatabase. */
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export interface TestServerOptions {
  /** Merged over configFor's (rate limits raised so tests that do not exercise them are not throttled). */
  config?: Partial<Config>;
  /** An existing database (several servers may share one); a fresh one of the suite's dialect by default. */
  db?: TestDatabase;
  /** Silent (AMS_TEST_LOG_LEVEL) by default; pass one to read what the server logs. */
  logger?: Logger;
  /** What startApp lets a test replace: the database handle, the presence store, the adapter key. */
  context?: ContextOverrides;
}

/** The real server in this process, on a random port over a fresh database. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const db = options.db ?? (await createTestDatabase());
  const config = configFor(db.url, {
    rateLimit: { anonPerMinute: 100_000, agentPerMinute: 100_000 },
    ...options.config,
  });
  const logger = options.logger ?? pino({ level: process.env.AMS_TEST_LOG_LEVEL ?? 'silent' });
  const app = await startApp(config, logger, options.context);
  return {
    app,
    url: app.url,
    db,
    async close({ keepDatabase = false } = {}) {
      await app.close();
      if (!keepDatabase) await db.drop();
    },
  };
}

export interface TestNodes {
  nodes: TestServer[];
  db: TestDatabase;
  /** Closes every node, then drops the database. */
  close(): Promise<void>;
}

/**
 * `count` servers in this process on one fresh database and the test Redis, as the nodes of a
 * cluster: their Socket.IO adapters share a channel of their own (this Redis is shared with other runs).
 */
export async function startTestNodes(count: number, options: Omit<TestServerOptions, 'db'> = {}): Promise<TestNodes> {
  const db = await createTestDatabase();
  const realtimeAdapterKey = `ams-test:${randomBytes(5).toString('hex')}`;
  const nodes: TestServer[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.close({ keepDatabase: true })));
    await db.drop();
  };
  try {
    for (let i = 0; i < count; i++) {
      nodes.push(await startTestServer({ ...options, db, config: { redisUrl: REDIS_TEST_URL, ...options.config }, context: { realtimeAdapterKey, ...options.context } }));
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { nodes, db, close };
}

export type ServerProcess = SpawnedProcess;
export type StartedServer = ServerProcess & { url: string };

export interface ServerProcessOptions {
  name?: string;
  /** The command, when a test wraps the entry point (e.g. in unshare); `node dist/main.js` by default. */
  argv?: string[];
}

/**
 * `node dist/main.js` configured only through `env`, as in production: nothing is inherited from
 * the test runner but PATH (no stray DATABASE_URL or REDIS_URL). PORT 0, HOST 127.0.0.1 and
 * LOG_LEVEL info unless `env` says otherwise. Does not wait for it to listen.
 */
export async function spawnServer(env: Record<string, string>, options: ServerProcessOptions = {}): Promise<ServerProcess> {
  await ensureBuilt();
  return spawnProcess({
    name: options.name ?? 'server',
    argv: options.argv ?? [process.execPath, MAIN_JS],
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
  });
}

export const LISTENING_LOG = 'agent messaging service listening';

/** spawnServer, then waits for the line saying it listens; kills it when it does not start. */
export async function startServerProcess(env: Record<string, string>, options: ServerProcessOptions & { timeoutMs?: number } = {}): Promise<StartedServer> {
  const server = await spawnServer(env, options);
  try {
    const listening = await server.waitForLog((line) => line.msg === LISTENING_LOG && typeof line.url === 'string', options.timeoutMs ?? 60_000);
    return Object.assign(server, { url: listening.url as string });
  } catch (err) {
    await server.kill();
    throw err;
  }
}
