import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startApp, type RunningApp } from '../../src/app.js';
import { testConfig, type Config } from '../../src/config/config.js';

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
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ams-test-'));
    return { url: `sqlite:${join(dir, 'ams.sqlite')}`, drop: () => Promise.resolve(rmSync(dir, { recursive: true, force: true })) };
  }
  const name = `ams_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
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

/**
 * The real server on a random port over a fresh database. Rate limits are raised so tests that
 * do not exercise them are not throttled; pass `config` to set small ones.
 */
export async function startTestServer(options: { config?: Partial<Config>; db?: TestDatabase } = {}): Promise<TestServer> {
  const db = options.db ?? (await createTestDatabase());
  const config = configFor(db.url, {
    rateLimit: { anonPerMinute: 100_000, agentPerMinute: 100_000 },
    ...options.config,
  });
  const app = await startApp(config, pino({ level: process.env.AMS_TEST_LOG_LEVEL ?? 'silent' }));
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
