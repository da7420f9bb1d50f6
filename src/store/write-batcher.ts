import type { CompiledQuery, Kysely } from 'kysely';
import { isStorageUnavailable } from './errors.js';
import type { DB } from './schema.js';
import { commitStatements } from './statements.js';

/**
 * Group commit. Writes that arrive together (in one turn of the event loop, or while the previous
 * batch is committing) share one short transaction, and each caller's promise settles only once
 * that transaction has committed: an acknowledgement still means "stored". A commit is the
 * expensive part of a small write (WAL frames for every touched page in SQLite, a flush to disk in
 * PostgreSQL), so under load it is paid once per batch instead of once per write; alone, a write
 * waits for nothing but the next turn of the loop.
 *
 * A batch is three steps (`GroupCommit`): `prepare` reads what the writes depend on, outside the
 * transaction; `write` returns the batch's statements, compiled but not run (`BatchWrites`), and
 * may add the transaction's one read of what they left (`LastRead`), whose rows reach `committed`
 * after the commit, before any caller hears of it. The statements are then run in one transaction:
 * on SQLite as one message to the writer thread with the read and the commit (`writeBatch` in
 * sqlite.ts), without a promise or a round trip per statement; on PostgreSQL one after the other,
 * a round trip each, or, when the batch is its last read alone (no statements: one statement that
 * writes and answers), that statement without `begin`/`commit`.
 * So `write` reads nothing and cannot see its writes' row counts; `prepare`'s reads run on the read
 * connection, on the loop.
 *
 * `minIntervalMs` spaces commits under load: a batch starts at least that long after the previous
 * one started, so sustained writes share commits instead of committing one by one as they trickle
 * in; a write that comes after a quiet period still goes at once. With `spaceFromRate`, commits are
 * spaced only while writes arrive at least that fast (per second, measured over the last
 * RATE_WINDOW_MS): below it every batch goes at once (latency), above it batches fill up, and a
 * batch's fixed costs (the commit, a round trip to SQLite's writer thread, one socket write per
 * member for the frames it causes) are shared by more writes (CPU; docs/benchmarks.md).
 *
 * A batch that fails for a reason of its own data (a unique violation, say) is retried one write
 * per transaction (all three steps again), so each caller gets exactly the outcome it would have
 * had alone. A storage outage fails the whole batch at once.
 */
export interface WriteBatcher<T> {
  /** Resolves after the transaction holding `item` committed; rejects with its error otherwise. */
  write(item: T): Promise<void>;
}

/** A transaction's last read, run after its writes (with the commit, on SQLite). */
export interface LastRead<R> {
  query: CompiledQuery<R>;
  /** Its rows, once the transaction committed; before any writer's promise settles. */
  committed(rows: readonly R[]): void;
}

/** What one batch writes: its statements in order (none of them reads), and its last read. */
export interface BatchWrites {
  statements: readonly CompiledQuery[];
  lastRead?: LastRead<unknown>;
}

export interface GroupCommit<T, P> {
  /** Before each attempt's transaction: reads the writes depend on. Holds no write lock. */
  prepare?(items: readonly T[]): Promise<P>;
  /** The statements of one batch, compiled against `db` (see above: no reads, no row counts). */
  write(db: Kysely<DB>, items: readonly T[], prepared: P | undefined): BatchWrites;
}

interface Pending<T> {
  item: T;
  resolve(): void;
  reject(err: unknown): void;
}

export interface WriteBatcherOptions {
  maxBatch?: number;
  minIntervalMs?: number;
  /** Writes per second from which `minIntervalMs` applies (default 0: always). */
  spaceFromRate?: number;
}

/** The window over which the arrival rate of writes is measured (for `spaceFromRate`). */
const RATE_WINDOW_MS = 100;

export function createWriteBatcher<T, P = void>(
  db: Kysely<DB>,
  steps: GroupCommit<T, P>,
  { maxBatch = 256, minIntervalMs = 0, spaceFromRate = 0 }: WriteBatcherOptions = {},
): WriteBatcher<T> {
  let queue: Pending<T>[] = [];
  let scheduled = false;
  let running = false;
  let lastStart = -Infinity;
  // Arrival rate: writes counted in the current window; `fast` is what the last full window showed.
  let windowStart = -Infinity;
  let windowWrites = 0;
  let fast = spaceFromRate <= 0;
  const countWrite = (now: number): void => {
    if (spaceFromRate <= 0) return;
    const elapsed = now - windowStart;
    if (elapsed >= RATE_WINDOW_MS) {
      // A window with no write at all in between counts as slow (elapsed is then long).
      fast = (windowWrites * 1000) / elapsed >= spaceFromRate;
      windowStart = now;
      windowWrites = 0;
    }
    windowWrites++;
  };

  /** One attempt: the transaction, then (committed) its last read's rows handed over. */
  const commit = async (items: readonly T[]): Promise<() => void> => {
    const prepared = steps.prepare ? await steps.prepare(items) : undefined;
    const { statements, lastRead } = steps.write(db, items, prepared);
    // A batch written by data-modifying CTEs is its last read alone: one round trip on PostgreSQL.
    const rows = await commitStatements(db, statements, lastRead?.query);
    return () => lastRead?.committed(rows);
  };

  const flush = async (): Promise<void> => {
    scheduled = false;
    if (running || queue.length === 0) return;
    running = true;
    lastStart = performance.now();
    const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
    queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch);
    // Committed writes are never retried: a failure after the commit (in `committed`) fails them.
    const settle = (pending: readonly Pending<T>[], handOver: () => void): void => {
      try {
        handOver();
      } catch (err) {
        for (const p of pending) p.reject(err);
        return;
      }
      for (const p of pending) p.resolve();
    };
    try {
      let handOver: () => void;
      try {
        handOver = await commit(batch.map((p) => p.item));
      } catch (err) {
        if (batch.length === 1 || isStorageUnavailable(err)) {
          for (const p of batch) p.reject(err);
        } else {
          for (const p of batch) await commit([p.item]).then((one) => settle([p], one), p.reject);
        }
        return;
      }
      settle(batch, handOver);
    } finally {
      running = false;
      if (queue.length > 0) schedule();
    }
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    const wait = fast ? lastStart + minIntervalMs - performance.now() : 0;
    // After the I/O callbacks of this turn (every write they started joins the batch), or once the
    // interval since the previous batch has passed.
    if (wait <= 0) setImmediate(() => void flush());
    else setTimeout(() => void flush(), wait);
  };

  return {
    write(item) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        countWrite(performance.now());
        schedule();
      });
    },
  };
}
