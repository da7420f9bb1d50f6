import type { Kysely, Transaction } from 'kysely';
import { isStorageUnavailable } from './errors.js';
import type { DB } from './schema.js';

/**
 * Group commit. Writes that arrive together (in one turn of the event loop, or while the previous
 * batch is committing) share one short transaction, and each caller's promise settles only once
 * that transaction has committed: an acknowledgement still means "stored". A commit is the
 * expensive part of a small write (WAL frames for every touched page in SQLite, a flush to disk in
 * PostgreSQL), so under load it is paid once per batch instead of once per write; alone, a write
 * waits for nothing but the next turn of the loop.
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

export function createWriteBatcher<T>(
  db: Kysely<DB>,
  apply: (trx: Transaction<DB>, items: readonly T[]) => Promise<void>,
  maxBatch = 256,
): WriteBatcher<T> {
  let queue: Pending<T>[] = [];
  let scheduled = false;
  let running = false;

  const commit = (items: readonly T[]): Promise<void> => db.transaction().execute((trx) => apply(trx, items));

  const flush = async (): Promise<void> => {
    scheduled = false;
    if (running || queue.length === 0) return;
    running = true;
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
    // After the I/O callbacks of this turn: every write they started joins the batch.
    setImmediate(() => void flush());
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
