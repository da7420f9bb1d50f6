import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { prepared } from '../../src/store/prepared.js';
import { sleep } from '../helpers/wait.js';

describe('prepared (compiled once, run with fresh parameters)', () => {
  let database: Database;
  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
  });
  afterEach(() => database.close());

  it('maps arguments to their placeholders whatever their order in the SQL', async () => {
    // Arguments deliberately in another order than the columns.
    const insert = prepared(2, (db, value: string, key: string) => db.insertInto('service_settings').values({ key, value }));
    const byKey = prepared(1, (db, key: string) => db.selectFrom('service_settings').select(['key', 'value']).where('key', '=', key));
    await insert(database.db, 'one', 'k1');
    await database.db.transaction().execute((trx) => insert(trx, 'two', 'k2'));
    expect((await byKey(database.db, 'k1')).rows).toEqual([{ key: 'k1', value: 'one' }]);
    expect((await byKey(database.db, 'k2')).rows).toEqual([{ key: 'k2', value: 'two' }]);
    expect((await byKey(database.db, 'k3')).rows).toEqual([]);
  });

  it('refuses a query where an argument is not exactly one parameter', () => {
    const unused = prepared<[string, string]>(2, (db, key) => db.selectFrom('service_settings').select('key').where('key', '=', key));
    expect(() => unused(database.db, 'k1', 'x')).toThrow(/every one of the 2 arguments/);
  });
});

describe('prepared on SQLite: straight on the connection while it is free', () => {
  let dir: string;
  let database: Database;
  const insert = prepared(2, (db, key: string, value: string) => db.insertInto('service_settings').values({ key, value }));
  const valueOf = prepared(1, (db, key: string) => db.selectFrom('service_settings').select('value').where('key', '=', key));
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ams-prepared-'));
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'ams.sqlite'), lockTimeoutMs: 2000 }, { error: () => undefined });
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('skips Kysely’s executor when idle and gives the same result shapes', async () => {
    const executeQuery = vi.spyOn(database.db, 'executeQuery');
    const direct = await insert(database.db, 'k1', 'one');
    const read = await valueOf(database.db, 'k1');
    expect(executeQuery).not.toHaveBeenCalled();
    const viaKysely = await database.db.transaction().execute((trx) => insert(trx, 'k2', 'two'));
    expect(direct).toEqual({ numAffectedRows: 1n, insertId: expect.any(BigInt) as bigint, rows: [] });
    expect(Object.keys(direct).sort()).toEqual(Object.keys(viaKysely).sort());
    expect(read.rows).toEqual([{ value: 'one' }]);
  });

  it('never joins a transaction under way: a write from outside waits for it and survives its rollback', async () => {
    let outside: Promise<unknown> | undefined;
    await expect(
      database.db.transaction().execute(async (trx) => {
        await insert(trx, 'inside', 'rolled back');
        outside = insert(database.db, 'outside', 'kept');
        await sleep(20);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await outside;
    expect((await valueOf(database.db, 'inside')).rows).toEqual([]);
    expect((await valueOf(database.db, 'outside')).rows).toEqual([{ value: 'kept' }]);
  });

  it('a database locked by another process: the write waits off the event loop and goes through on release', async () => {
    const other = new SQLite(join(dir, 'ams.sqlite'));
    try {
      other.exec('begin immediate');
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 5);
      const write = insert(database.db, 'waited', 'yes');
      setTimeout(() => other.exec('commit'), 100);
      await write;
      clearInterval(ticker);
      expect(ticks).toBeGreaterThan(5); // the loop kept turning while the write waited
      expect((await valueOf(database.db, 'waited')).rows).toEqual([{ value: 'yes' }]);
    } finally {
      if (other.inTransaction) other.exec('rollback');
      other.close();
    }
  });
});
