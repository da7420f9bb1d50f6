import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery, Kysely, SqliteAdapter, SqliteDialect, sql,
  type Compilable, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult, type SqliteDatabase,
} from 'kysely';
import type { Database } from './database-handle.js';
import type { DB } from './schema.js';
import { fastSqlite } from './sqlite-fast.js';
import { SAFETY_NET_AUTOCHECKPOINT_PAGES, startCheckpointer } from './sqlite-checkpointer.js';

/**
 * SQLite for the embedded deployment, set up so that a locked or full database never blocks the
 * event loop and never hangs a request.
 *
 * Durability: WAL with synchronous=NORMAL (default) makes every acknowledged commit survive a crash
 * of the process (SIGKILL, OOM kill, uncaught error): the commit is in the WAL file in the OS page
 * cache before the response is sent. A power loss or kernel crash may lose the last commits before
 * the next checkpoint (never corrupting the file; a worker thread checkpoints every 200 ms).
 * synchronous=FULL (SQLITE_SYNCHRONOUS=full) adds an fsync per commit so commits also survive a
 * power loss, at about ten times the cost per commit, paid on the event loop because
 * better-sqlite3 is synchronous. See docs/reliability.md.
 *
 * Locking: better-sqlite3 is synchronous, so SQLite's own busy handler would sleep on the event
 * loop. busy_timeout is therefore 0 and waiting for another process's write lock (the `ams` CLI)
 * is done here, asynchronously: transactions start with BEGIN IMMEDIATE (the write lock is taken
 * first, so a busy database is seen before any work is done and retrying is safe), and a statement
 * outside a transaction that finds the database busy is retried with backoff, up to lockTimeoutMs.
 * Past that the error surfaces (503), and until some write goes through again, writes make a single
 * attempt instead of queueing behind one another for lockTimeoutMs each.
 */

export interface SqliteOptions {
  path: string;
  synchronous: 'normal' | 'full';
  lockTimeoutMs: number;
}

const READ_ONLY_SQL = /^\s*(select|with|pragma|explain)\b/i;

const isBusy = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
  && (err as { code: string }).code.startsWith('SQLITE_BUSY');

/** Shared by the connection wrapper: whether a writer recently gave up waiting for the lock. */
interface LockState {
  contended: boolean;
}

class LockWaitingConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly handle: SQLite.Database,
    private readonly state: LockState,
    private readonly lockTimeoutMs: number,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const write = !READ_ONLY_SQL.test(query.sql);
    const deadline = Date.now() + (write && this.state.contended ? 0 : this.lockTimeoutMs);
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.inner.executeQuery<R>(query);
        if (write) this.state.contended = false;
        return result;
      } catch (err) {
        // Inside a transaction a statement is not retried: the transaction holds the write lock
        // already (BEGIN IMMEDIATE), so a busy error there is not a lock wait.
        if (!isBusy(err) || this.handle.inTransaction) throw err;
        const left = deadline - Date.now();
        if (left <= 0) {
          if (write) this.state.contended = true;
          throw err;
        }
        await sleep(Math.min(2 ** attempt, 50, left));
      }
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

class LockWaitingDriver implements Driver {
  readonly state: LockState = { contended: false };
  /** Whether Kysely holds the one connection: a query or a transaction is under way. */
  connectionHeld = false;
  private wrapped: LockWaitingConnection | undefined;

  constructor(
    private readonly inner: Driver,
    private readonly handle: SQLite.Database,
    private readonly statements: SqliteDatabase,
    private readonly lockTimeoutMs: number,
  ) {}

  /**
   * Runs a compiled query at once, as SqliteConnection would (same cached statement, same result
   * shape), or returns undefined when it may not: while Kysely holds the connection (a query or
   * someone else's transaction under way) or when the database is busy (the caller then takes the
   * lock-waiting path, which waits for the lock asynchronously).
   */
  runIfIdle(query: CompiledQuery): QueryResult<unknown> | undefined {
    if (this.connectionHeld || this.handle.inTransaction) return undefined;
    const statement = this.statements.prepare(query.sql);
    try {
      if (statement.reader) return { rows: statement.all(query.parameters) };
      const { changes, lastInsertRowid } = statement.run(query.parameters);
      this.state.contended = false;
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    } catch (err) {
      if (isBusy(err)) return undefined;
      throw err;
    }
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    this.connectionHeld = true;
    // SQLite has one connection; wrap it once.
    if (this.wrapped?.inner !== connection) this.wrapped = new LockWaitingConnection(connection, this.handle, this.state, this.lockTimeoutMs);
    return this.wrapped;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // SQLite rolls back by itself on some errors (disk full, I/O error); a second rollback would
    // fail and hide the original error from the caller.
    if (!this.handle.inTransaction) return;
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.savepoint!(connection, name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.rollbackToSavepoint!(connection, name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.releaseSavepoint!(connection, name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.connectionHeld = false;
    return this.inner.releaseConnection(connection instanceof LockWaitingConnection ? connection.inner : connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** SQLite supports transactional DDL: migrations then apply entirely or not at all, even if killed. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class LockWaitingSqliteDialect extends SqliteDialect {
  /** Set when Kysely creates the driver (in its constructor). */
  driver: LockWaitingDriver | undefined;

  constructor(private readonly handle: SQLite.Database, private readonly lockTimeoutMs: number, private readonly database: SqliteDatabase) {
    super({ database });
  }

  override createDriver(): Driver {
    this.driver = new LockWaitingDriver(super.createDriver(), this.handle, this.database, this.lockTimeoutMs);
    return this.driver;
  }

  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * The SQLite database object. `executeQuery` (what `prepared` runs its compiled statements with)
 * skips Kysely's executor while the connection is free: its connection mutex, plugin hooks and
 * promise hops cost more than a small statement itself (on a session exchange, 0.15 to 0.35 ms of
 * the event loop's 0.65 to 0.95). Never inside someone else's open transaction, never beside a
 * query Kysely is running; transactions (`Transaction`, a class of Kysely's) always take the
 * executor. Queries built and executed with `.execute()` take the executor too.
 */
class SqliteKysely extends Kysely<DB> {
  readonly #driver: LockWaitingDriver;

  constructor(dialect: LockWaitingSqliteDialect) {
    super({ dialect });
    // Kysely's constructor has created the driver.
    this.#driver = dialect.driver!;
  }

  override executeQuery<R>(query: CompiledQuery<R> | Compilable<R>): Promise<QueryResult<R>> {
    const compiled = 'compile' in query ? query.compile() : query;
    try {
      const result = this.#driver.runIfIdle(compiled);
      // The rows of the statement compiled for R.
      if (result !== undefined) return Promise.resolve(result as QueryResult<R>);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return super.executeQuery(compiled);
  }
}

/**
 * The database holds the JWT signing secret: only the service's user may read it, whatever the
 * umask. A folder created here is 0700 (an existing one is the operator's); the database file is
 * created 0600 and an older, looser one tightened. SQLite creates its -wal and -shm files with the
 * database file's mode; ones left by an older version are tightened too. See docs/reliability.md.
 */
function prepareDataFiles(path: string): void {
  const folder = dirname(resolve(path));
  const created = mkdirSync(folder, { recursive: true, mode: 0o700 });
  if (created !== undefined) {
    for (let dir = folder; ; dir = dirname(dir)) {
      chmodSync(dir, 0o700);
      if (dir === created || dir === dirname(dir)) break;
    }
  }
  closeSync(openSync(path, 'a', 0o600));
  tightenDataFiles(path);
}

function tightenDataFiles(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch (err) {
      // Absent, or another user's (root's `ams` on the service's file is fine; the reverse cannot
      // tighten it, and its owner does at its next open).
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'EPERM') throw err;
    }
  }
}

export function openSqlite(options: SqliteOptions): Database {
  const { path, synchronous, lockTimeoutMs } = options;
  if (path !== ':memory:') prepareDataFiles(path);
  const handle = new SQLite(path);
  // Opening may meet another process mid-write; waiting synchronously is fine before listening.
  handle.pragma(`busy_timeout = ${lockTimeoutMs}`);
  handle.pragma('journal_mode = WAL');
  if (path !== ':memory:') tightenDataFiles(path);
  handle.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  handle.pragma('foreign_keys = ON');
  // From here on lock waits are asynchronous (see above).
  handle.pragma('busy_timeout = 0');
  // Checkpoints off the event loop (see sqlite-checkpointer.ts); the file exists from here on.
  const checkpointer = path === ':memory:' ? null : startCheckpointer(path, synchronous);
  if (checkpointer) handle.pragma(`wal_autocheckpoint = ${SAFETY_NET_AUTOCHECKPOINT_PAGES}`);
  // Reused statements and rows read as arrays (see sqlite-fast.ts).
  const fast = fastSqlite(handle);
  const db = new SqliteKysely(new LockWaitingSqliteDialect(handle, lockTimeoutMs, fast));
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
