import type { Kysely, Transaction } from 'kysely';
import { isStorageUnavailable } from './errors.js';
import type { DB } from './schema.js';
import { SqliteKysely } from './sqlite.js';

/**
 * Group commit. Writes that arrive together (in one turn of the event loop, or while the previous
 * batch is committing) share one short transaction, and each caller's promise settles only once
 * that transaction has committed: an acknowledgement still means "stored". A commit is the
 * expensive part of a small write (WAL frames for every touched page in SQLite, a flush to disk in
 * PostgreSQL), so under load it is paid once per batch instead of once per write; alone, a write
 * waits for nothing but the next turn of the loop.
 *
 * `minIntervalMs` spaces commits under load: a batch starts at least that long after the previous
 * one started, so sustained writes share commits instead of committing one by one as they trickle
 * in; a write that comes after a quiet period still goes at once.
 *
 * On SQLite the batch's writes are pipelined to the writer thread (`pipelinedTransaction` in
 * sqlite.ts): `apply` must not read the row counts of its writes (they are not known yet); rows it
 * reads (a `select`, a `returning`) are real.
 *
 * A batch that fails for a reason of its own data (a unique violation, say) is retried one write
 * per transaction, so each caller gets exactly the outcome it would have had alone. A storage
 * outage fails the whole batch at once.
 */
export interface WriteBatcher<T> {
  /** Resolves after the transaction holding `item` committed; rejects with its error otherwise. */
  write(item: T): Promise<void>;
}

interface Pending<T> {
  item: T;
  resolve(): void;
  reject(err: unknown): void;
}

export interface WriteBatcherOptions {
  maxBatch?: number;
  minIntervalMs?: number;
}

export function createWriteBatcher<T>(
  db: Kysely<DB>,
  apply: (trx: Transaction<DB>, items: readonly T[]) => Promise<void>,
  { maxBatch = 256, minIntervalMs = 0 }: WriteBatcherOptions = {},
): WriteBatcher<T> {
  let queue: Pending<T>[] = [];
  let scheduled = false;
  let running = false;
  let lastStart = -Infinity;

  const commit = (items: readonly T[]): Promise<void> =>
    db instanceof SqliteKysely ? db.pipelinedTransaction((trx) => apply(trx, items)) : db.transaction().execute((trx) => apply(trx, items));

  const flush = async (): Promise<void> => {
    scheduled = false;
    if (running || queue.length === 0) return;
    running = true;
    lastStart = performance.now();
    const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
    queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch);
    try {
      await commit(batch.map((p) => p.item));
      for (const p of batch) p.resolve();
    } catch (err) {
      if (batch.length === 1 || isStorageUnavailable(err)) {
        for (const p of batch) p.reject(err);
      } else {
        for (const p of batch) await commit([p.item]).then(p.resolve, p.reject);
      }
    } finally {
      running = false;
      if (queue.length > 0) schedule();
    }
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    const wait = lastStart + minIntervalMs - performance.now();
    // After the I/O callbacks of this turn (every write they started joins the batch), or once the
    // interval since the previous batch has passed.
    if (wait <= 0) setImmediate(() => void flush());
    else setTimeout(() => void flush(), wait);
  };

  return {
    write(item) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        schedule();
      });
    },
  };
}
