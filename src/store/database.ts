import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config/config.js';
import type { Database } from './database-handle.js';
import { isStorageUnavailable } from './driver-errors.js';
import type { DB } from './schema.js';
import { migrateToLatest } from './migrations/index.js';
import { openSqlite } from './sqlite.js';

export type { Database, Dialect } from './database-handle.js';

/** How long a write waits for another process's SQLite write lock before answering 503. */
export const SQLITE_LOCK_TIMEOUT_DEFAULT_MS = 2000;


export interface DatabaseLogger {
  error(obj: object, msg: string): void;
}

/**
 * Rows come back with the same JS types as from SQLite, so store code has one shape to handle:
 * timestamptz as an ISO string with milliseconds (not a Date), json/jsonb as JSON text (read
 * through fromJson like SQLite's text), bigint (count(*)) and numeric (sum) as numbers. Set per
 * pool rather than on pg's global registry, so no other pg user is affected.
 */
const { builtins } = pg.types;
const parseTimestamptz = pg.types.getTypeParser(builtins.TIMESTAMPTZ);
const asNumber = (value: string): number => Number(value);
const asText = (value: string): string => value;
const asIso = (value: string): string => {
  const date = parseTimestamptz(value) as Date | number;
  // ±infinity never comes from our code; pass it through rather than throw.
  return date instanceof Date ? date.toISOString() : value;
};
const PG_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format === undefined || format === 'text') {
      switch (oid) {
        case builtins.INT8:
        case builtins.NUMERIC:
          return asNumber;
        case builtins.TIMESTAMPTZ:
          return asIso;
        case builtins.JSON:
        case builtins.JSONB:
          return asText;
      }
    }
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/**
 * Pool defaults chosen so that no request waits on PostgreSQL for more than a few seconds:
 * - connectionTimeoutMillis bounds both opening a connection and waiting for a free one in the
 *   pool; a server that is down refuses at once, a blackholed one costs at most this;
 * - statement_timeout cancels runaway statements on the server (a clean 57014 error);
 * - query_timeout is the client-side backstop when the server itself stops answering;
 * - idle_in_transaction_session_timeout frees locks held by a transaction whose node stalled;
 * - TCP keep-alive notices peers that vanished without closing the connection.
 */
export const PG_POOL_DEFAULTS = {
  connectionTimeoutMillis: 5000,
  idleTimeoutMillis: 30_000,
  statement_timeout: 5000,
  query_timeout: 6000,
  idle_in_transaction_session_timeout: 10_000,
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
} as const satisfies pg.PoolConfig;

function createPool(url: string, max: number, logger: DatabaseLogger, extra: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: 'agent-messaging-service',
    types: PG_TYPES,
    ...PG_POOL_DEFAULTS,
    ...extra,
  });
  // An idle client whose backend died (restart, pg_terminate_backend) must not crash the process;
  // the pool drops it and opens a new one on the next checkout.
  pool.on('error', (err) => logger.error({ err: { message: err.message } }, 'idle PostgreSQL client failed'));
  // pg-pool removes its own error listener while a client is checked out; a backend dying during a
  // transaction would then emit 'error' with no listener and kill the process. The failing query
  // already rejects (and the request answers 503), so this listener only has to exist.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  // When query_timeout fires, pg rejects the query but keeps the connection with that query still
  // active: every later query on it queues behind an answer that never comes (a silent network cut),
  // and the pool, given it back without an error, hands it out again and again; the node would stay
  // unavailable long after the database is reachable again (docs/reliability.md "Chaos run"). A client
  // released with a query still active is closed: its 'end' makes the pool drop it.
  pool.on('release', (err: Error | undefined, client: pg.PoolClient) => {
    // `_activeQuery` is pg 8's own field (the public getter is deprecated and warns).
    if (!err && (client as unknown as { _activeQuery: unknown })._activeQuery) {
      logger.error({}, 'PostgreSQL client released with an unanswered query; closing its connection');
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  });
  return pool;
}

function openPostgres(url: string, poolMax: number, logger: DatabaseLogger): Database {
  const unavailableListeners: (() => void)[] = [];
  // A query that failed because PostgreSQL is away may have committed (its answer lost) without the
  // after-commit broadcast: the realtime layer checks its sockets' positions once it is back. Both
  // failures count: a connection that could not be had (not a query, so not in Kysely's log) and a
  // query that failed on one.
  const noteFailure = (err: unknown): void => {
    if (isStorageUnavailable(err)) for (const listener of unavailableListeners) listener();
  };
  const dialect = new PostgresDialect({ pool: createPool(url, poolMax, logger) });
  const createDriver = dialect.createDriver.bind(dialect);
  dialect.createDriver = () => {
    const driver = createDriver();
    const acquire = driver.acquireConnection.bind(driver);
    driver.acquireConnection = () => acquire().catch((err: unknown) => {
      noteFailure(err);
      throw err;
    });
    return driver;
  };
  const db = new Kysely<DB>({
    dialect,
    log(event) {
      if (event.level === 'error') noteFailure(event.error);
    },
  });
  return {
    db,
    dialect: 'postgres',
    onUnavailable(listener) {
      unavailableListeners.push(listener);
    },
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * Migrations run on a connection of their own without a statement timeout: a later migration may
 * legitimately take long (an index on a big table), and a node that starts while another one is
 * migrating waits on Kysely's advisory lock instead of failing.
 */
async function migratePostgres(url: string, logger: DatabaseLogger): Promise<void> {
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: createPool(url, 1, logger, { statement_timeout: false, query_timeout: undefined }) }),
  });
  try {
    await migrateToLatest(db, 'postgres');
  } finally {
    await db.destroy();
  }
}

export async function openDatabase(config: DatabaseConfig, logger: DatabaseLogger): Promise<Database> {
  if (config.kind === 'postgres') {
    await migratePostgres(config.url, logger);
    return openPostgres(config.url, config.poolMax, logger);
  }
  const database = openSqlite({ path: config.path, synchronous: config.synchronous ?? 'normal', lockTimeoutMs: config.lockTimeoutMs ?? SQLITE_LOCK_TIMEOUT_DEFAULT_MS });
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
