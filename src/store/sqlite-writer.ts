import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

/**
 * The SQLite write connection, on a worker thread. A commit writes WAL frames (pwrite), and under a
 * busy disk one such write was measured to block for up to 17 ms (docs/benchmarks.md, scenario 11);
 * on the event loop that stalls every request, handshake and delivery behind it. Here the worker
 * waits on the disk and the loop does not: it posts statements and is told when they are done.
 *
 * Requests are executed in the order they were posted, one at a time, on the one connection.
 * Another process's write lock (the `ams` CLI) is waited for here, outside a transaction (a
 * transaction's BEGIN IMMEDIATE included), with backoff up to lockTimeoutMs: the thread sleeps, the
 * event loop does not, and every request behind it needs the lock anyway. Past the timeout the error
 * surfaces (503), and until some statement goes through again, statements make a single attempt
 * instead of queueing behind one another for lockTimeoutMs each.
 * A request that wants no answer (`reply: false`, a write inside a pipelined transaction: see
 * sqlite.ts) is posted with the next one that does, in one message; requests made in the same turn
 * (a transaction's last read and its commit) travel together too. Inside a transaction, the first
 * statement that fails fails every later one with its error until the rollback (as PostgreSQL
 * does), so a commit posted behind a failed statement never commits the rest.
 * Errors cross back as `SqliteError`s with their SQLite code (driver-errors.ts reads the code).
 */

export interface WriteResult {
  rows: Record<string, unknown>[];
  numAffectedRows?: bigint;
  insertId?: bigint;
}

/** `runMany`: one statement run once per parameter list, in order (a group commit's inserts of one kind). */
type Op = 'run' | 'begin' | 'rollback' | 'runMany';

const OPS: readonly Op[] = ['run', 'begin', 'rollback', 'runMany'];

/**
 * One request, as a tuple (cheaper to clone than an object): its id, the index of its op in OPS,
 * the SQL (its text, or the number it was registered under), the parameters, whether it wants an
 * answer, and the number to register the text under (first time only).
 */
type Request = [id: number, op: number, sql: string | number, parameters: readonly unknown[], reply: boolean, register?: number];

/** SQL texts the worker knows by number, so that a hot statement's text is cloned once, not per run. */
const MAX_REGISTERED_SQL = 1024;

interface Reply {
  id: number;
  columns?: string[];
  rows?: unknown[][];
  changes?: number;
  lastInsertRowid?: number | bigint;
  error?: { message: string; code: string };
}

// Plain CommonJS run with eval, like the checkpointer's: the same from src (tests) and from dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
const statements = new Map();
const prepare = (sql) => {
  let entry = statements.get(sql);
  if (entry === undefined) {
    const statement = db.prepare(sql);
    if (statement.reader) statement.raw(true);
    entry = { statement, columns: statement.reader ? statement.columns().map((c) => c.name) : undefined };
    if (statements.size >= 256) statements.delete(statements.keys().next().value);
    statements.set(sql, entry);
  }
  return entry;
};
// The first error of a statement inside a transaction: later statements fail with it until the rollback.
let failed = null;
// Whether a statement recently gave up waiting for another process's lock (see waitingForLock).
let contended = false;
const pause = new Int32Array(new SharedArrayBuffer(4));
const isBusy = (err) => typeof (err && err.code) === 'string' && err.code.startsWith('SQLITE_BUSY');
// busy_timeout is 0: SQLite's own busy handler cannot tell a lock wait that already timed out.
const waitingForLock = (work) => {
  const deadline = Date.now() + (contended ? 0 : workerData.lockTimeoutMs);
  for (let i = 0; ; i++) {
    try {
      const result = work();
      contended = false;
      return result;
    } catch (err) {
      if (!isBusy(err)) throw err;
      const left = deadline - Date.now();
      if (left <= 0) {
        contended = true;
        throw err;
      }
      Atomics.wait(pause, 0, 0, Math.min(2 ** i, 50, left));
    }
  }
};
// The connection's settings, each through the lock wait: while the main connection or the
// checkpointer touches the WAL index at start-up, even a pragma can meet SQLITE_BUSY.
for (const pragma of workerData.pragmas) waitingForLock(() => db.pragma(pragma));
const texts = new Map();
const run = (sql, parameters) => {
  const { statement, columns } = prepare(typeof sql === 'number' ? texts.get(sql) : sql);
  if (columns !== undefined) return { columns, rows: statement.all(parameters) };
  const { changes, lastInsertRowid } = statement.run(parameters);
  return { changes, lastInsertRowid };
};
const OPS = ['run', 'begin', 'rollback', 'runMany'];
const execute = ([, opIndex, sql, parameters, , register]) => {
  if (register !== undefined) texts.set(register, sql);
  const op = OPS[opIndex];
  if (op === 'rollback') {
    failed = null;
    if (db.inTransaction) db.exec('rollback');
    return {};
  }
  if (op === 'begin') failed = null;
  if (failed !== null) throw failed;
  if (op === 'runMany') {
    // Only inside a transaction (a group commit): the lock is held, and one failure fails them all.
    if (!db.inTransaction) throw new Error('runMany outside a transaction');
    for (const each of parameters) run(sql, each);
    return {};
  }
  // Inside a transaction the lock is held already (BEGIN IMMEDIATE): a busy error is not a lock wait.
  return db.inTransaction ? run(sql, parameters) : waitingForLock(() => run(sql, parameters));
};
parentPort.on('message', (requests) => {
  if (requests === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  const replies = [];
  for (const request of requests) {
    const wantsReply = request[4];
    // (SQLite may end the transaction itself on some errors: what counts is whether it was open.)
    const inTransaction = db.inTransaction;
    let reply;
    try {
      reply = execute(request);
    } catch (err) {
      const error = { message: String(err && err.message), code: typeof (err && err.code) === 'string' ? err.code : '' };
      if (!wantsReply || (inTransaction && failed === null && OPS[request[1]] === 'run')) failed = err;
      reply = { error };
    }
    if (wantsReply) {
      reply.id = request[0];
      replies.push(reply);
    }
  }
  if (replies.length > 0) parentPort.postMessage(replies);
});
`;

/** What the service sees when the writer thread is gone: a storage outage (503), see driver-errors.ts. */
const STOPPED_MESSAGE = 'The database connection is not open (the SQLite writer thread stopped)';

function toError(error: { message: string; code: string }): Error {
  return error.code.startsWith('SQLITE_') ? new SQLite.SqliteError(error.message, error.code) : Object.assign(new Error(error.message), error.code ? { code: error.code } : {});
}

function toResult(reply: Reply): WriteResult {
  if (reply.columns !== undefined) {
    const { columns } = reply;
    const rows = reply.rows!.map((values) => {
      const row: Record<string, unknown> = {};
      // Same keys as better-sqlite3's own objects; a repeated name keeps the last value, as there.
      for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
      return row;
    });
    return { rows };
  }
  if (reply.changes === undefined) return { rows: [] };
  return { rows: [], numAffectedRows: BigInt(reply.changes), insertId: BigInt(reply.lastInsertRowid ?? 0) };
}

export interface SqliteWriter {
  /**
   * Runs one statement on the write connection; resolves with its result once it has run. Sent at
   * the end of the current synchronous run of code, with every other statement issued in it.
   */
  run(sql: string, parameters: readonly unknown[], op?: Op): Promise<WriteResult>;
  /**
   * Posts a statement whose result nobody reads (`begin`, a write inside a pipelined transaction):
   * its error surfaces at the next `run`.
   */
  post(sql: string, parameters: readonly unknown[], op?: Op): void;
  /** `post` of one statement once per parameter list, in one request (inside a transaction only). */
  postMany(sql: string, parameterLists: readonly (readonly unknown[])[]): void;
  /** False once the thread has stopped (closed or crashed). */
  readonly alive: boolean;
  close(): Promise<void>;
}

export function startSqliteWriter(path: string, pragmas: readonly string[], lockTimeoutMs: number): SqliteWriter {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver, pragmas, lockTimeoutMs } });
  const pending = new Map<number, { resolve(result: WriteResult): void; reject(err: Error): void }>();
  let queue: Request[] = [];
  let nextId = 0;
  const registered = new Map<string, number>();
  const request = (op: Op, sql: string, parameters: readonly unknown[], reply: boolean): Request => {
    const known = registered.get(sql);
    if (known !== undefined) return [nextId++, OPS.indexOf(op), known, parameters, reply];
    if (registered.size >= MAX_REGISTERED_SQL) return [nextId++, OPS.indexOf(op), sql, parameters, reply];
    registered.set(sql, registered.size);
    return [nextId++, OPS.indexOf(op), sql, parameters, reply, registered.size - 1];
  };
  let alive = true;
  let flushScheduled = false;
  let flushQueued = false;
  // Referenced only while answers are awaited: an idle writer does not keep the process alive.
  worker.unref();

  const failAll = (err: Error): void => {
    alive = false;
    for (const { reject } of pending.values()) reject(err);
    pending.clear();
  };
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      failAll(new Error(STOPPED_MESSAGE));
      resolve();
    });
  });
  // The cause goes into the message: it reaches the logs (a 503's details never leave the process).
  worker.on('error', (err) => failAll(Object.assign(new Error(`${STOPPED_MESSAGE}: ${err.message}`), { cause: err })));
  worker.on('message', (replies: Reply[]) => {
    for (const reply of replies) {
      const waiter = pending.get(reply.id);
      // A pipelined statement's error has no waiter: the next statement reports it.
      if (waiter === undefined) continue;
      pending.delete(reply.id);
      if (reply.error) waiter.reject(toError(reply.error));
      else waiter.resolve(toResult(reply));
    }
    if (pending.size === 0) worker.unref();
  });

  const flush = (): void => {
    flushScheduled = false;
    flushQueued = false;
    if (queue.length === 0) return;
    const requests = queue;
    queue = [];
    worker.postMessage(requests);
  };

  const post = (sql: string, parameters: readonly unknown[], op: Op = 'run'): void => {
    queue.push(request(op, sql, parameters, false));
    // Normally the commit carries it; this only covers a caller that never runs another statement.
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  return {
    get alive() {
      return alive;
    },
    run(sql, parameters, op = 'run') {
      if (!alive) return Promise.reject(new Error(STOPPED_MESSAGE));
      const entry = request(op, sql, parameters, true);
      return new Promise<WriteResult>((resolve, reject) => {
        if (pending.size === 0) worker.ref();
        pending.set(entry[0], { resolve, reject });
        queue.push(entry);
        // At the end of this turn's synchronous work: a read and the commit issued together go in one message.
        if (!flushQueued) {
          flushQueued = true;
          queueMicrotask(flush);
        }
      });
    },
    post,
    postMany(sql, parameterLists) {
      post(sql, parameterLists, 'runMany');
    },
    async close() {
      if (!alive) return;
      flush();
      // The process waits for the connection to close cleanly (it checkpoints what it can).
      worker.ref();
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
