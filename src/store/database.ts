import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type SqliteDatabase, type SqliteStatement } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config/config.js';
import type { DB } from './schema.js';
import { migrateToLatest } from './migrations/index.js';
import { SAFETY_NET_AUTOCHECKPOINT_PAGES, startCheckpointer } from './sqlite-checkpointer.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /** Called once the migrations have run (SQLite: starts reusing prepared statements). */
  migrated?(): void;
  /** Throws when the database cannot answer `select 1`. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseLogger {
  error(obj: object, msg: string): void;
}

/**
 * What Kysely's SQLite driver calls, made faster in two ways, both invisible to queries:
 * - Statements are kept by SQL text: Kysely prepares every query anew, and parsing and planning
 *   cost as much as running a small query. Bounded (the service has a few dozen query shapes,
 *   `in (...)` lists of varying length aside); safe because Kysely runs one query at a time on
 *   the connection. Off until the migrations have run, so no statement outlives a schema change.
 * - Rows are read as arrays and made objects in JS: better-sqlite3 sets each property of each row
 *   through the V8 API, which costs more than the query itself on a page of 50 messages.
 */
export function fastSqlite(handle: SQLite.Database, max = 256): SqliteDatabase & { enableCache(): void } {
  const statements = new Map<string, SqliteStatement>();
  let caching = false;
  return {
    close: () => handle.close(),
    enableCache() {
      caching = true;
    },
    prepare(text: string): SqliteStatement {
      let statement = statements.get(text);
      if (statement === undefined) {
        statement = rowsAsArrays(handle.prepare(text));
        if (!caching) return statement;
        if (statements.size >= max) statements.delete(statements.keys().next().value as string);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

function rowsAsArrays(statement: SQLite.Statement): SqliteStatement {
  if (!statement.reader) return statement;
  statement.raw(true);
  const columns = statement.columns().map((c) => c.name);
  const toRow = (values: unknown[]): Record<string, unknown> => {
    const row: Record<string, unknown> = {};
    // Same keys as better-sqlite3's own objects; a repeated name keeps the last value, as there.
    for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
    return row;
  };
  return {
    reader: true,
    all: (parameters) => (statement.all(parameters) as unknown[][]).map(toRow),
    run: (parameters) => statement.run(parameters),
    *iterate(parameters) {
      for (const values of statement.iterate(parameters) as IterableIterator<unknown[]>) yield toRow(values);
    },
  };
}

/**
 * SQLite runs in WAL mode with synchronous=NORMAL: a committed transaction survives a crash of
 * the process (SIGKILL included); a power loss may lose the last transactions before the WAL is
 * checkpointed to disk (within 200 ms: a worker thread checkpoints). busy_timeout lets a second
 * process (the CLI) wait for the write lock.
 */
function openSqlite(path: string): Database {
  const inMemory = path === ':memory:';
  if (!inMemory) mkdirSync(dirname(resolve(path)), { recursive: true });
  const handle = new SQLite(path);
  handle.pragma('journal_mode = WAL');
  handle.pragma('synchronous = NORMAL');
  handle.pragma('foreign_keys = ON');
  handle.pragma('busy_timeout = 5000');
  // Checkpoints off the event loop (see sqlite-checkpointer.ts); the file exists from here on.
  const checkpointer = inMemory ? null : startCheckpointer(path);
  if (checkpointer) handle.pragma(`wal_autocheckpoint = ${SAFETY_NET_AUTOCHECKPOINT_PAGES}`);
  const fast = fastSqlite(handle);
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: fast }) });
  return {
    db,
    dialect: 'sqlite',
    migrated: () => fast.enableCache(),
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await checkpointer?.close();
      await db.destroy();
    },
  };
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
  const database = config.kind === 'sqlite' ? openSqlite(config.path) : openPostgres(config.url, config.poolMax, logger);
  try {
    // Migrations are written against Kysely<unknown>: they must not depend on today's table types.
    await migrateToLatest(database.db as unknown as Kysely<unknown>, database.dialect);
    database.migrated?.();
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}
