import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { prepared, PreparedQueryError } from '../../src/store/prepared.js';
import { sleep } from '../helpers/wait.js';

describe('prepared (compiled once, run with fresh parameters)', () => {
  let database: Database;
  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
  });
  afterEach(() => database.close());

  it('maps parameters to their placeholders by identity, whatever their order in the SQL, with the query’s constants kept', async () => {
    // Declared in another order than the columns.
    const insert = prepared((db, p: { value: string; key: string }) => db.insertInto('service_settings').values({ key: p.key, value: p.value }));
    const byKey = prepared((db, p: { key: string }) =>
      db.selectFrom('service_settings').select(['key', 'value']).where('key', '=', p.key).where('value', '!=', 'hidden'),
    );
    // One parameter in two places.
    const either = prepared((db, p: { key: string }) =>
      db.selectFrom('service_settings').select('key').where((eb) => eb.or([eb('key', '=', p.key), eb('value', '=', p.key)])).orderBy('key'),
    );
    await insert(database.db, { value: 'one', key: 'k1' });
    await database.db.transaction().execute((trx) => insert(trx, { value: 'two', key: 'k2' }));
    await insert(database.db, { value: 'hidden', key: 'k3' });
    await insert(database.db, { value: 'k1', key: 'k4' });
    expect((await byKey(database.db, { key: 'k1' })).rows).toEqual([{ key: 'k1', value: 'one' }]);
    expect((await byKey(database.db, { key: 'k2' })).rows).toEqual([{ key: 'k2', value: 'two' }]);
    expect((await byKey(database.db, { key: 'k3' })).rows).toEqual([]);
    expect((await either(database.db, { key: 'k1' })).rows).toEqual([{ key: 'k1' }, { key: 'k4' }]);
  });

  it('gives the builder’s row type', async () => {
    const byKey = prepared((db, p: { key: string }) => db.selectFrom('service_settings').select('value').where('key', '=', p.key));
    const result = await byKey(database.db, { key: 'none' });
    expectTypeOf(result.rows).toEqualTypeOf<{ value: string }[]>();
    expect(result.rows).toEqual([]);
  });

  it('refuses, at first run, a parameter unused or used other than as a value', async () => {
    const unused = prepared((db, p: { key: string; other: string }) => db.selectFrom('service_settings').select('key').where('key', '=', p.key));
    await expect(unused(database.db, { key: 'k1', other: 'x' })).rejects.toThrow(/parameter "other" is given but the query does not use it/);
    const computed = prepared((db, p: { rows: number }) => db.selectFrom('service_settings').select('key').limit(p.rows + 1));
    await expect(computed(database.db, { rows: 1 })).rejects.toThrow(PreparedQueryError);
    const identifier = prepared((db, p: { column: string }) => db.selectFrom('service_settings').select(sql.ref<string>(p.column).as('c')));
    await expect(identifier(database.db, { column: 'key' })).rejects.toThrow(PreparedQueryError);
    const immediate = prepared((db, p: { value: string }) => db.selectFrom('service_settings').select(sql.lit(p.value).as('c')));
    await expect(immediate(database.db, { value: 'x' })).rejects.toThrow(PreparedQueryError);
    const branch = prepared((db, p: { all: boolean }) => (p.all ? db.selectFrom('service_settings').select('key') : db.selectFrom('service_settings').select('key').limit(1)));
    await expect(branch(database.db, { all: true })).rejects.toThrow(/parameter "all" is read but is not a value of the query/);
  });
});

describe('prepared on SQLite: straight on the connection while it is free', () => {
  let dir: string;
  let database: Database;
  const insert = prepared((db, p: { key: string; value: string }) => db.insertInto('service_settings').values({ key: p.key, value: p.value }));
  const valueOf = prepared((db, p: { key: string }) => db.selectFrom('service_settings').select('value').where('key', '=', p.key));
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ams-prepared-'));
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'ams.sqlite'), lockTimeoutMs: 2000 }, { error: () => undefined });
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('skips Kysely’s executor when idle and gives the same result shapes', async () => {
    const executeQuery = vi.spyOn(database.db.getExecutor(), 'executeQuery');
    const direct = await insert(database.db, { key: 'k1', value: 'one' });
    const read = await valueOf(database.db, { key: 'k1' });
    expect(executeQuery).not.toHaveBeenCalled();
    const viaKysely = await database.db.transaction().execute((trx) => insert(trx, { key: 'k2', value: 'two' }));
    expect(direct).toEqual({ numAffectedRows: 1n, insertId: expect.any(BigInt) as bigint, rows: [] });
    expect(Object.keys(direct).sort()).toEqual(Object.keys(viaKysely).sort());
    expect(read.rows).toEqual([{ value: 'one' }]);
  });

  it('runs on the database it is given: two open at once each keep their own rows (no shared state)', async () => {
    const other = await openDatabase({ kind: 'sqlite', path: join(dir, 'other.sqlite') }, { error: () => undefined });
    try {
      await insert(database.db, { key: 'k', value: 'first' });
      await insert(other.db, { key: 'k', value: 'second' });
      expect((await valueOf(database.db, { key: 'k' })).rows).toEqual([{ value: 'first' }]);
      expect((await valueOf(other.db, { key: 'k' })).rows).toEqual([{ value: 'second' }]);
    } finally {
      await other.close();
    }
  });

  it('never joins a transaction under way: a write from outside waits for it and survives its rollback', async () => {
    let outside: Promise<unknown> | undefined;
    await expect(
      database.db.transaction().execute(async (trx) => {
        await insert(trx, { key: 'inside', value: 'rolled back' });
        outside = insert(database.db, { key: 'outside', value: 'kept' });
        await sleep(20);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await outside;
    expect((await valueOf(database.db, { key: 'inside' })).rows).toEqual([]);
    expect((await valueOf(database.db, { key: 'outside' })).rows).toEqual([{ value: 'kept' }]);
  });

  it('a database locked by another process: the write waits off the event loop and goes through on release', async () => {
    const other = new SQLite(join(dir, 'ams.sqlite'));
    try {
      other.exec('begin immediate');
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 5);
      const write = insert(database.db, { key: 'waited', value: 'yes' });
      setTimeout(() => other.exec('commit'), 100);
      await write;
      clearInterval(ticker);
      expect(ticks).toBeGreaterThan(5); // the loop kept turning while the write waited
      expect((await valueOf(database.db, { key: 'waited' })).rows).toEqual([{ value: 'yes' }]);
    } finally {
      if (other.inTransaction) other.exec('rollback');
      other.close();
    }
  });
});
