import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { isStorageUnavailable, isUniqueViolation } from '../../src/store/errors.js';
import type { SqliteKysely } from '../../src/store/sqlite.js';

/** A statement that keeps SQLite busy for a while (hundreds of milliseconds) without touching the disk. */
const SLOW_COUNT = sql<{ n: number }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000000) select count(*) as n from c`;

describe('SQLite: writes on the writer thread, reads on the event loop', () => {
  let dir: string;
  let database: Database;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ams-writer-'));
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'ams.sqlite'), lockTimeoutMs: 500 }, { error: () => undefined });
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const valueOf = async (key: string): Promise<string | undefined> =>
    (await database.db.selectFrom('service_settings').select('value').where('key', '=', key).executeTakeFirst())?.value;

  it('runs a transaction on the writer: the event loop keeps turning and reads answer while it works', async () => {
    let readWhileBusy: string | undefined | null = null;
    let ticks = 0;
    await database.db.transaction().execute(async (trx) => {
      await trx.insertInto('service_settings').values({ key: 'inside', value: 'v' }).execute();
      const slow = SLOW_COUNT.execute(trx);
      // Answered by the read connection at once, from the last commit: the transaction is not visible.
      readWhileBusy = await valueOf('inside');
      const ticker = setInterval(() => ticks++, 5);
      try {
        expect((await slow).rows[0]!.n).toBe(1_000_000);
      } finally {
        clearInterval(ticker);
      }
    });
    expect(readWhileBusy).toBeUndefined();
    expect(await valueOf('inside')).toBe('v'); // committed: visible to the read connection at once
    // The count takes hundreds of milliseconds of SQLite; on the loop, no timer would fire meanwhile.
    expect(ticks).toBeGreaterThan(5);
  });

  it('brings a writer error back with its SQLite code, and rolls the transaction back', async () => {
    await database.db.insertInto('service_settings').values({ key: 'k', value: 'first' }).execute();
    const duplicate = await database.db.transaction().execute(async (trx) => {
      await trx.insertInto('service_settings').values({ key: 'other', value: 'x' }).execute();
      await trx.insertInto('service_settings').values({ key: 'k', value: 'second' }).execute();
    }).catch((err: unknown) => err);
    expect(duplicate).toBeInstanceOf(SQLite.SqliteError);
    expect(duplicate).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(isUniqueViolation(duplicate)).toBe(true);
    expect(await valueOf('other')).toBeUndefined();
    expect(await valueOf('k')).toBe('first');
  });

  const insert = (db: SqliteKysely, key: string, value: string) => db.insertInto('service_settings').values({ key, value }).compile();

  it('writes a batch in one transaction: an error of one statement (in a run of the same statement) fails the commit with its code, and nothing is kept', async () => {
    const db = database.db as SqliteKysely;
    await db.insertInto('service_settings').values({ key: 'k', value: 'first' }).execute();
    const failed = await db.writeBatch(['a', 'k', 'b'].map((key) => insert(db, key, 'piped'))).catch((err: unknown) => err);
    expect(failed).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(await db.selectFrom('service_settings').select('key').where('value', '=', 'piped').execute()).toEqual([]);

    // The last read sees the batch's writes, answered with the commit, which keeps them all.
    const last = await db.writeBatch(
      ['a', 'b', 'c'].map((key) => insert(db, key, 'piped')),
      db.selectFrom('service_settings').select('key').where('value', '=', 'piped').orderBy('key').compile(),
    );
    expect(last.map((r) => r.key)).toEqual(['a', 'b', 'c']);
    expect(await valueOf('c')).toBe('piped');
    // The writer is free again: a plain write goes through.
    await db.insertInto('service_settings').values({ key: 'd', value: 'after' }).execute();
    expect(await valueOf('d')).toBe('after');
  });

  it('sends a batch, its last read and its commit to the writer thread in one message', async () => {
    const db = database.db as SqliteKysely;
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    try {
      const rows = await db.writeBatch(
        ['x1', 'x2', 'x3'].map((key) => insert(db, key, 'one trip')),
        db.selectFrom('service_settings').select('key').where('value', '=', 'one trip').orderBy('key').compile(),
      );
      expect(rows.map((r) => r.key)).toEqual(['x1', 'x2', 'x3']);
      // begin, the three inserts (one statement: one request), the read and the commit.
      expect(posted).toHaveBeenCalledTimes(1);
      expect((posted.mock.calls[0]![0] as unknown[]).length).toBe(4);
    } finally {
      posted.mockRestore();
    }
  });

  it('never commits behind a failed statement: a failed last read fails the commit it travels with', async () => {
    const db = database.db as SqliteKysely;
    // Fails on the writer (no such function), after the insert went through.
    const failed = await db.writeBatch([insert(db, 'kept?', 'no')], sql<{ x: number }>`select no_such_function(1) as x`.compile(db))
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(SQLite.SqliteError);
    expect(await valueOf('kept?')).toBeUndefined();

    // The same in a plain transaction whose code catches the failed statement and goes on: as on
    // PostgreSQL, the transaction cannot commit any more.
    const caught = await db.transaction().execute(async (trx) => {
      await trx.insertInto('service_settings').values({ key: 'kept too?', value: 'no' }).execute();
      await sql`select no_such_function(1)`.execute(trx).catch(() => undefined);
    }).catch((err: unknown) => err);
    expect(caught).toBeInstanceOf(SQLite.SqliteError);
    expect(await valueOf('kept too?')).toBeUndefined();
    // The connection is usable again after the rollback.
    await db.insertInto('service_settings').values({ key: 'after', value: 'yes' }).execute();
    expect(await valueOf('after')).toBe('yes');
  });

  it('answers a storage-unavailable error (503) once the writer thread is gone', async () => {
    await database.close();
    const err = await database.db.insertInto('service_settings').values({ key: 'late', value: 'x' }).execute().catch((e: unknown) => e);
    expect(isStorageUnavailable(err)).toBe(true);
    // Reopened for afterEach.
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'ams.sqlite') }, { error: () => undefined });
    await expect(database.ping()).resolves.toBeUndefined();
  });
});

describe('SQLite :memory:', () => {
  it('is a private file of its own (two connections cannot share memory), removed at close', async () => {
    const a = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
    const b = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
    await a.db.insertInto('service_settings').values({ key: 'only-a', value: 'x' }).execute();
    expect(await b.db.selectFrom('service_settings').select('key').where('key', '=', 'only-a').execute()).toEqual([]);
    const file = (await sql<{ file: string }>`select file from pragma_database_list where name = 'main'`.execute(a.db)).rows[0]!.file;
    expect(existsSync(file)).toBe(true);
    await a.close();
    await b.close();
    expect(existsSync(file)).toBe(false);
  });
});
