import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { createWriteBatcher } from '../../src/store/write-batcher.js';

const logger = { error: () => undefined };

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
    const writer = createWriteBatcher<string>(database.db, async (trx, items) => {
      batches.push([...items]);
      for (const key of items) await trx.insertInto('service_settings').values({ key, value: 'v' }).execute();
    });
    await Promise.all(['k1', 'k2', 'k3'].map((k) => writer.write(k)));
    expect(batches).toEqual([['k1', 'k2', 'k3']]);
    expect(await keys()).toEqual(['k1', 'k2', 'k3']);

    // Alone, a write gets its own transaction.
    await writer.write('k4');
    expect(batches).toHaveLength(2);
  });

  it('gives each write of a failed batch its own outcome: one duplicate does not fail the others', async () => {
    const writer = createWriteBatcher<string>(database.db, async (trx, items) => {
      for (const key of items) await trx.insertInto('service_settings').values({ key, value: 'v' }).execute();
    });
    await writer.write('k1');
    const outcomes = await Promise.allSettled(['k2', 'k1', 'k3'].map((k) => writer.write(k)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(await keys()).toEqual(['k1', 'k2', 'k3']);
  });

  it('fails the whole batch at once, without retries, when storage is unavailable', async () => {
    let calls = 0;
    const writer = createWriteBatcher<string>(database.db, async () => {
      calls++;
      throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    });
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
      const writer = createWriteBatcher<string>(database.db, async (trx, items) => {
        starts.push(performance.now());
        for (const key of items) await trx.insertInto('service_settings').values({ key, value: 'v' }).execute();
      }, { minIntervalMs: 500 });
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

  it('keeps writes that arrive while a batch commits for the next one, in order', async () => {
    const batches: string[][] = [];
    const writer = createWriteBatcher<string>(database.db, async (trx, items) => {
      batches.push([...items]);
      for (const key of items) await trx.insertInto('service_settings').values({ key, value: 'v' }).execute();
    }, { maxBatch: 2 });
    await Promise.all(['k1', 'k2', 'k3', 'k4', 'k5'].map((k) => writer.write(k)));
    expect(batches).toEqual([['k1', 'k2'], ['k3', 'k4'], ['k5']]);
    expect(await keys()).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
  });
});
