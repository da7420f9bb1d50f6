import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config/config.js';
import type { DB } from './schema.js';
import { migrateToLatest } from './migrations/index.js';
import { openSqlite } from './sqlite.js';

export type Dialect = 'sqlite' | 'postgres';

/** How long a write waits for another process's SQLite write lock before answering 503. */
export const SQLITE_LOCK_TIMEOUT_DEFAULT_MS = 2000;

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /** Throws when the database cannot answer `select 1`. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseLogger {
  error(obj: object, msg: string): void;
}

// pg parses int8 (count(*)) as string by default; our counts fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

function openPostgres(url: string, poolMax: number, logger: DatabaseLogger): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolMax,
    // Fail fast when the server is away instead of queueing forever; requests get 503.
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    statement_timeout: 10_000,
    query_timeout: 15_000,
  });
  // An idle client whose backend died (restart, pg_terminate_backend) must not crash the process;
  // the pool drops it and opens a new one on the next checkout.
  pool.on('error', (err) => logger.error({ err: { message: err.message } }, 'idle PostgreSQL client failed'));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

export async function openDatabase(config: DatabaseConfig, logger: DatabaseLogger): Promise<Database> {
  const database = config.kind === 'sqlite'
    ? openSqlite({ path: config.path, synchronous: config.synchronous ?? 'normal', lockTimeoutMs: config.lockTimeoutMs ?? SQLITE_LOCK_TIMEOUT_DEFAULT_MS })
    : openPostgres(config.url, config.poolMax, logger);
  try {
    // Migrations are written against Kysely<unknown>: they must not depend on today's table types.
    await migrateToLatest(database.db as unknown as Kysely<unknown>, database.dialect);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}
