import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import {
  IdentifierNode, Kysely, RawNode, SqliteAdapter, SqliteDialect, createQueryId, sql,
  type Compilable, type CompiledQuery, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult, type SqliteDatabase,
} from 'kysely';
import type { Database } from './database-handle.js';
import type { DB } from './schema.js';
import { fastSqlite, type SqliteStatement } from './sqlite-fast.js';
import { SAFETY_NET_AUTOCHECKPOINT_PAGES, startCheckpointer } from './sqlite-checkpointer.js';
import { startSqliteWriter, type SqliteWriter } from './sqlite-writer.js';
import { pauseOf } from './test-pause.js';

/**
 * SQLite for the embedded deployment, set up so that neither a busy disk, nor a locked or full
 * database, blocks the event loop or hangs a request.
 *
 * Two connections: reads run on the event loop, on a connection of their own (synchronous, and fast:
 * WAL readers see the last commit and never wait for the writer); every write, and every statement
 * of a transaction, runs on a worker thread that owns the write connection (sqlite-writer.ts), so a
 * commit that waits on the disk (WAL writes; docs/benchmarks.md, scenario 11) waits there. A read
 * after an acknowledged write sees it: the writer answers once the commit is in the WAL.
 *
 * Durability: WAL with synchronous=NORMAL (default) makes every acknowledged commit survive a crash
 * of the process (SIGKILL, OOM kill, uncaught error): the commit is in the WAL file in the OS page
 * cache before the response is sent. A power loss or kernel crash may lose the last commits before
 * the next checkpoint (never corrupting the file; a worker thread checkpoints every 200 ms).
 * synchronous=FULL (SQLITE_SYNCHRONOUS=full) adds an fsync per commit so commits also survive a
 * power loss, at about ten times the cost per commit (paid on the writer thread). See
 * docs/reliability.md.
 *
 * Locking: waiting for another process's write lock (the `ams` CLI) happens on the writer thread,
 * with a bounded wait (lockTimeoutMs), see sqlite-writer.ts.
 */

export interface SqliteOptions {
  path: string;
  synchronous: 'normal' | 'full';
  lockTimeoutMs: number;
}

const isBusy = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
  && (err as { code: string }).code.startsWith('SQLITE_BUSY');

/** The write connection, one user at a time: a transaction from begin to its end, or one write. */
class WriterLock {
  private held = false;
  private readonly waiters: (() => void)[] = [];

  tryLock(): boolean {
    if (this.held) return false;
    this.held = true;
    return true;
  }

  async lock(): Promise<void> {
    if (this.tryLock()) return;
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  unlock(): void {
    const next = this.waiters.shift();
    // Handed over directly: nobody can take it in between.
    if (next) next();
    else this.held = false;
  }
}

/**
 * The two connections of one SQLite database: reads on the event loop (`reads`, synchronous and
 * fast: pages come from memory, and WAL readers never wait for the writer) and everything that
 * writes on the writer thread (`writer`). Shared by the Kysely connections handed out below.
 */
class SplitSqlite {
  /** Until the migrations have run, every statement goes to the writer (the schema is changing). */
  migrated = false;
  readonly lock = new WriterLock();

  constructor(
    private readonly reads: ReturnType<typeof fastSqlite>,
    readonly writer: SqliteWriter,
    private readonly lockTimeoutMs: number,
  ) {}

  /** The read connection's statement for `sql` when it only reads; undefined when it must go to the writer. */
  readStatement(sql: string): SqliteStatement | undefined {
    if (!this.migrated || /^\s*pragma\b/i.test(sql)) return undefined;
    const statement = this.reads.prepare(sql);
    return statement.readonly ? statement : undefined;
  }

  read(statement: SqliteStatement, parameters: readonly unknown[]): QueryResult<unknown> {
    if (statement.reader) return { rows: statement.all(parameters) as unknown[] };
    // A read-only statement that returns nothing (`select` never does; a comment, say).
    statement.run(parameters);
    return { rows: [] };
  }

  /**
   * A read, waiting asynchronously while the database is busy (another process's exclusive lock,
   * rare with WAL): busy_timeout is 0, SQLite's own busy handler would sleep on the event loop.
   */
  async readWaiting(statement: SqliteStatement, parameters: readonly unknown[]): Promise<QueryResult<unknown>> {
    const deadline = Date.now() + this.lockTimeoutMs;
    for (let i = 0; ; i++) {
      try {
        return this.read(statement, parameters);
      } catch (err) {
        const left = deadline - Date.now();
        if (!isBusy(err) || left <= 0) throw err;
        await sleep(Math.min(2 ** i, 50, left));
      }
    }
  }
}

/**
 * One Kysely connection: a view of the split database. Outside a transaction a read runs on the
 * read connection at once and a write is sent to the writer; from `begin` to the end of the
 * transaction every statement, reads included, runs on the writer (a transaction reads its own
 * writes), which this connection holds meanwhile. (A group commit skips Kysely's transactions: see
 * `SqliteKysely.writeBatch`.)
 */
class SplitConnection implements DatabaseConnection {
  private inTransaction = false;

  constructor(private readonly store: SplitSqlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const { sql, parameters } = query;
    if (this.inTransaction) return (await this.store.writer.run(sql, parameters)) as QueryResult<R>;
    const statement = this.store.readStatement(sql);
    if (statement !== undefined) return (await this.store.readWaiting(statement, parameters)) as QueryResult<R>;
    await this.store.lock.lock();
    try {
      return (await this.store.writer.run(sql, parameters)) as QueryResult<R>;
    } finally {
      this.store.lock.unlock();
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const statement = this.inTransaction ? undefined : this.store.readStatement(query.sql);
    if (statement === undefined || !statement.reader) throw new Error('SQLite: only reads outside a transaction can be streamed');
    for (const row of statement.iterate(query.parameters)) yield { rows: [row as R] };
  }

  /**
   * BEGIN IMMEDIATE is posted, not waited for: the writer waits for another process's lock if need
   * be, and if it gives up, the transaction's next statement (at the latest its commit) fails with
   * SQLITE_BUSY. One round trip to the writer less per transaction.
   */
  async begin(): Promise<void> {
    await this.store.lock.lock();
    this.store.writer.post('begin immediate', [], 'begin');
    this.inTransaction = true;
  }

  async commit(): Promise<void> {
    // On failure the transaction may still be open: Kysely rolls it back next.
    await this.store.writer.run('commit', []);
    this.end();
  }

  async rollback(): Promise<void> {
    try {
      // Only if still open: SQLite rolls back by itself on some errors (disk full, I/O error), and
      // a second rollback would fail and hide the original error from the caller.
      await this.store.writer.run('rollback', [], 'rollback');
    } finally {
      this.end();
    }
  }

  /** Kysely releases the connection after the transaction; ends it if that did not happen (it always should). */
  release(): void {
    if (this.inTransaction) this.end();
  }

  private end(): void {
    if (!this.inTransaction) return;
    this.inTransaction = false;
    this.store.lock.unlock();
  }
}

class SplitSqliteDriver implements Driver {
  constructor(readonly store: SplitSqlite, private readonly closeAll: () => Promise<void>) {}

  init(): Promise<void> {
    return Promise.resolve();
  }

  /** Connections are views and cost nothing: reads never wait for one; writes wait for the writer lock. */
  acquireConnection(): Promise<DatabaseConnection> {
    return Promise.resolve(new SplitConnection(this.store));
  }

  beginTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as SplitConnection).begin();
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as SplitConnection).commit();
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as SplitConnection).rollback();
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await connection.executeQuery(compile(parseSavepoint('savepoint', name), createQueryId()));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await connection.executeQuery(compile(parseSavepoint('rollback to', name), createQueryId()));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await connection.executeQuery(compile(parseSavepoint('release', name), createQueryId()));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as SplitConnection).release();
    return Promise.resolve();
  }

  destroy(): Promise<void> {
    return this.closeAll();
  }
}

/** Kysely's savepoint statements (`savepoint "name"`, ...), built as its own SQLite driver does. */
function parseSavepoint(command: 'savepoint' | 'rollback to' | 'release', name: string): RawNode {
  return RawNode.createWithChildren([RawNode.createWithSql(`${command} `), IdentifierNode.create(name)]);
}

/** SQLite supports transactional DDL: migrations then apply entirely or not at all, even if killed. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class SplitSqliteDialect extends SqliteDialect {
  constructor(private readonly driver: SplitSqliteDriver) {
    // The database is never opened through SqliteDialect: the driver below replaces its own.
    super({ database: undefined as unknown as SqliteDatabase });
  }

  override createDriver(): Driver {
    return this.driver;
  }

  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * The SQLite database object. `executeQuery` (what `prepared` runs its compiled statements with)
 * skips Kysely's executor: its plugin hooks and promise hops cost more than a small statement
 * itself (on a session exchange, 0.15 to 0.35 ms of the event loop's 0.65 to 0.95). A read runs on
 * the read connection at once; a write goes to the writer straight away when no transaction holds
 * it, and through Kysely's executor (which waits for the writer) otherwise. Transactions
 * (`Transaction`, a class of Kysely's) and queries built and executed with `.execute()` always take
 * the executor.
 */
export class SqliteKysely extends Kysely<DB> {
  readonly #store: SplitSqlite;

  constructor(driver: SplitSqliteDriver) {
    super({ dialect: new SplitSqliteDialect(driver) });
    this.#store = driver.store;
  }

  override executeQuery<R>(query: CompiledQuery<R> | Compilable<R>): Promise<QueryResult<R>> {
    const compiled = 'compile' in query ? query.compile() : query;
    const store = this.#store;
    let statement: SqliteStatement | undefined;
    try {
      statement = store.readStatement(compiled.sql);
      if (statement !== undefined) return Promise.resolve(store.read(statement, compiled.parameters) as QueryResult<R>);
    } catch (err) {
      if (statement === undefined || !isBusy(err)) return Promise.reject(err as Error);
      return store.readWaiting(statement, compiled.parameters) as Promise<QueryResult<R>>;
    }
    if (store.migrated && store.lock.tryLock()) {
      return (store.writer.run(compiled.sql, compiled.parameters) as Promise<QueryResult<R>>).finally(() => store.lock.unlock());
    }
    return super.executeQuery(compiled);
  }

  /**
   * A group commit (write-batcher.ts): `statements` (writes: nobody reads their results or row
   * counts) in one transaction, then `last`, the transaction's one read, and the commit. All of it
   * goes to the writer thread as one message, answered once: no promise, no Kysely transaction
   * and no round trip per statement. The writer fails every statement after a failed one, the
   * commit included (sqlite-writer.ts): an error of any (a unique violation, a full disk) fails the
   * batch with its code, and it is rolled back. Resolves with the rows of `last`, once committed.
   */
  async writeBatch<R>(statements: readonly CompiledQuery[], last?: CompiledQuery<R>): Promise<R[]> {
    const { lock, writer } = this.#store;
    await lock.lock();
    try {
      writer.post('begin immediate', [], 'begin');
      try {
        // Runs of one statement (a batch's inserts of one kind) travel as one request: less to copy.
        for (let i = 0; i < statements.length;) {
          const pause = pauseOf(statements[i]!);
          if (pause !== undefined) {
            // A test's pause (test-pause.ts): what came before has run, inside the open transaction.
            await writer.run('select 1', []);
            await pause();
            i++;
            continue;
          }
          const text = statements[i]!.sql;
          let end = i + 1;
          while (end < statements.length && statements[end]!.sql === text) end++;
          if (end - i === 1) writer.post(text, statements[i]!.parameters);
          else writer.postMany(text, statements.slice(i, end).map((s) => s.parameters));
          i = end;
        }
        const read = last === undefined ? undefined : writer.run(last.sql, last.parameters);
        const commit = writer.run('commit', []);
        const [result] = await Promise.all([read, commit]);
        return (result?.rows ?? []) as R[];
      } catch (err) {
        // Only if still open (the writer checks): SQLite rolls back by itself on some errors.
        await writer.run('rollback', [], 'rollback').catch(() => undefined);
        throw err;
      }
    } finally {
      lock.unlock();
    }
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
  const { synchronous, lockTimeoutMs } = options;
  // Two connections cannot share an in-memory database: ':memory:' is a private file, removed at close.
  const scratch = options.path === ':memory:' ? mkdtempSync(join(tmpdir(), 'ams-memory-')) : null;
  const path = scratch === null ? options.path : join(scratch, 'ams.sqlite');
  prepareDataFiles(path);
  const handle = new SQLite(path);
  // Opening may meet another process mid-write; waiting synchronously is fine before listening.
  handle.pragma(`busy_timeout = ${lockTimeoutMs}`);
  handle.pragma('journal_mode = WAL');
  tightenDataFiles(path);
  // From here on lock waits are asynchronous (SplitSqlite.readWaiting) or on the writer thread.
  handle.pragma('busy_timeout = 0');
  // Checkpoints off the event loop (see sqlite-checkpointer.ts); the file exists from here on.
  const checkpointer = startCheckpointer(path, synchronous);
  const writer = startSqliteWriter(path, [
    'busy_timeout = 0',
    `synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`,
    'foreign_keys = ON',
    `wal_autocheckpoint = ${SAFETY_NET_AUTOCHECKPOINT_PAGES}`,
  ], lockTimeoutMs);
  // Reused statements and rows read as arrays (see sqlite-fast.ts).
  const reads = fastSqlite(handle);
  const store = new SplitSqlite(reads, writer, lockTimeoutMs);
  const db = new SqliteKysely(new SplitSqliteDriver(store, async () => {
    await writer.close();
    await checkpointer.close();
    handle.close();
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
  }));
  return {
    db,
    dialect: 'sqlite',
    migrated() {
      reads.enableCache();
      store.migrated = true;
    },
    async ping() {
      await sql`select 1`.execute(db);
      if (!writer.alive) throw new Error('the SQLite writer thread stopped');
    },
    async close() {
      await db.destroy();
    },
  };
}
