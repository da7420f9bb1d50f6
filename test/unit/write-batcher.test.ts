import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import type { Kysely } from 'kysely';
import type { DB } from '../../src/store/schema.js';
import { createWriteBatcher, type BatchWrites } from '../../src/store/write-batcher.js';

const logger = { error: () => undefined };

/** A batch that inserts one settings row per item. */
const inserts = (db: Kysely<DB>, items: readonly string[]): BatchWrites => ({
  statements: items.map((key) => db.insertInto('service_settings').values({ key, value: 'v' }).compile()),
});

describe('createWriteBatcher (group commit)', () => {
  let database: Database;
  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, logger);
  });
  afterEach(async () => {
    await database.close();
  });

  const keys = async (): Promise<string[]> =>
    (await database.db.selectFrom('service_settings').select('key').where('key', 'like', 'k%').orderBy('key').execute()).map((r) => r.key);

  it('commits writes started together in one transaction and settles each after the commit', async () => {
    const batches: string[][] = [];
    const writer = createWriteBatcher<string>(database.db, { write: (db, items) => {
      batches.push([...items]);
      return inserts(db, items);
    } });
    await Promise.all(['k1', 'k2', 'k3'].map((k) => writer.write(k)));
    expect(batches).toEqual([['k1', 'k2', 'k3']]);
    expect(await keys()).toEqual(['k1', 'k2', 'k3']);

    // Alone, a write gets its own transaction.
    await writer.write('k4');
    expect(batches).toHaveLength(2);
  });

  it('gives each write of a failed batch its own outcome: one duplicate does not fail the others', async () => {
    const writer = createWriteBatcher<string>(database.db, { write: (db, items) => {
      return inserts(db, items);
    } });
    await writer.write('k1');
    const outcomes = await Promise.allSettled(['k2', 'k1', 'k3'].map((k) => writer.write(k)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(await keys()).toEqual(['k1', 'k2', 'k3']);
  });

  it('fails the whole batch at once, without retries, when storage is unavailable', async () => {
    let calls = 0;
    const writer = createWriteBatcher<string>(database.db, { write: () => {
      calls++;
      throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    } });
    const outcomes = await Promise.allSettled(['k1', 'k2'].map((k) => writer.write(k)));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toBe(1);
    expect(await keys()).toEqual([]);
  });

  it('spaces commits by minIntervalMs under load, and commits a lone write at once', async () => {
    // Fake clock: what is asserted is the schedule, not how fast this machine happens to be.
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'performance'] });
    try {
      const starts: number[] = [];
      const writer = createWriteBatcher<string>(database.db, { write: (db, items) => {
        starts.push(performance.now());
        return inserts(db, items);
      } }, { minIntervalMs: 500 });
      const t0 = performance.now();
      const k1 = writer.write('k1');
      await vi.advanceTimersByTimeAsync(0);
      await k1;
      expect(starts).toEqual([t0]); // a lone write is not held for the interval
      // Writes trickling in (in different turns of the loop) right after a commit wait for the
      // interval, and then share one commit.
      const k2 = writer.write('k2');
      await vi.advanceTimersByTimeAsync(1);
      const k3 = writer.write('k3');
      await vi.advanceTimersByTimeAsync(400);
      expect(starts).toHaveLength(1);
      // To exactly t0 + 500: the clock must not run on while the batch waits for the writer thread
      // (real I/O), or the start apply sees would be later than the batch's.
      await vi.advanceTimersByTimeAsync(99);
      await Promise.all([k2, k3]);
      expect(starts).toEqual([t0, t0 + 500]);
      expect(await keys()).toEqual(['k1', 'k2', 'k3']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('spaces commits only while writes arrive at spaceFromRate or faster (measured per 100 ms)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'performance'] });
    // Runs what is due without moving the clock until `p` settles (commits are real I/O).
    const settle = async <T>(p: Promise<T>): Promise<T> => {
      let done = false;
      void p.finally(() => {
        done = true;
      }).catch(() => undefined);
      while (!done) await vi.advanceTimersByTimeAsync(0);
      return p;
    };
    try {
      const starts: number[] = [];
      const writer = createWriteBatcher<string>(database.db, {
        write: (db, items) => {
          starts.push(performance.now());
          return inserts(db, items);
        },
      }, { minIntervalMs: 500, spaceFromRate: 1000 });
      const t0 = performance.now();
      // Slow: one write, then another 200 ms later: each commits at once.
      await settle(writer.write('k000'));
      await vi.advanceTimersByTimeAsync(200);
      await settle(writer.write('k001'));
      expect(starts).toEqual([t0, t0 + 200]);
      // Fast: 150 writes within the next 100 ms (1,500 a second); still committed as they come,
      // since the rate is known only once the window is over.
      const burst: Promise<void>[] = [];
      for (let i = 0; i < 150; i++) {
        burst.push(writer.write(`k1${String(i).padStart(3, '0')}`));
        if (i % 50 === 49) await vi.advanceTimersByTimeAsync(33);
      }
      await settle(Promise.all(burst));
      const afterBurst = starts.length;
      const lastBurstStart = starts[afterBurst - 1]!;
      expect(lastBurstStart).toBeLessThan(t0 + 300);
      // The next write, in a new window, sees that rate: it waits for the interval.
      await vi.advanceTimersByTimeAsync(t0 + 300 - performance.now());
      const spaced = writer.write('k200');
      await vi.advanceTimersByTimeAsync(lastBurstStart + 499 - performance.now());
      expect(starts).toHaveLength(afterBurst);
      await vi.advanceTimersByTimeAsync(1);
      await settle(spaced);
      expect(starts[afterBurst]).toBe(lastBurstStart + 500);
      // After a quiet second the rate is low again: at once.
      await vi.advanceTimersByTimeAsync(1000);
      const quietAt = performance.now();
      await settle(writer.write('k300'));
      expect(starts[afterBurst + 1]).toBe(quietAt);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps writes that arrive while a batch commits for the next one, in order', async () => {
    const batches: string[][] = [];
    const writer = createWriteBatcher<string>(database.db, { write: (db, items) => {
      batches.push([...items]);
      return inserts(db, items);
    } }, { maxBatch: 2 });
    await Promise.all(['k1', 'k2', 'k3', 'k4', 'k5'].map((k) => writer.write(k)));
    expect(batches).toEqual([['k1', 'k2'], ['k3', 'k4'], ['k5']]);
    expect(await keys()).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
  });

  it('reads before the transaction, writes, and hands the last read to the batch before any write settles; a retry runs all three again', async () => {
    await database.db.insertInto('service_settings').values({ key: 'k0', value: 'taken' }).execute();
    const log: string[] = [];
    const writer = createWriteBatcher<string, number>(database.db, {
      async prepare(items) {
        log.push(`prepare ${items.join(',')}`);
        // Outside the transaction: the last commit is what it sees.
        return (await database.db.selectFrom('service_settings').select('key').execute()).length;
      },
      write(db, items, before) {
        log.push(`write ${items.join(',')} after ${before}`);
        const keys = [...items];
        return {
          ...inserts(db, items),
          lastRead: {
            query: db.selectFrom('service_settings').select('key').where('key', 'in', keys).orderBy('key').compile(),
            committed(rows: readonly { key: string }[]) {
              log.push(`committed ${rows.map((r) => r.key).join(',')}`);
            },
          },
        };
      },
    });
    const settled = ['k1', 'k2'].map((k) => writer.write(k).then(() => log.push(`settled ${k}`)));
    await Promise.all(settled);
    expect(log).toEqual(['prepare k1,k2', 'write k1,k2 after 1', 'committed k1,k2', 'settled k1', 'settled k2']);

    // k0 exists: the batch fails on its data and each write is tried alone, all three steps again.
    log.length = 0;
    const outcomes = await Promise.allSettled(['k3', 'k0'].map((k) => writer.write(k)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
    expect(log).toEqual(['prepare k3,k0', 'write k3,k0 after 3', 'prepare k3', 'write k3 after 3', 'committed k3', 'prepare k0', 'write k0 after 4']);
  });

  it('never retries committed writes: a failure after the commit fails them as they are', async () => {
    let attempts = 0;
    const writer = createWriteBatcher<string>(database.db, {
      write(db, items) {
        attempts++;
        return {
          ...inserts(db, items),
          lastRead: {
            query: db.selectFrom('service_settings').select('key').compile(),
            committed() {
              throw new Error('after the commit');
            },
          },
        };
      },
    });
    const outcomes = await Promise.allSettled(['k1', 'k2'].map((k) => writer.write(k)));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(attempts).toBe(1);
    expect(await keys()).toEqual(['k1', 'k2']);
  });
});
