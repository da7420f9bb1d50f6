import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { prepared } from '../../src/store/prepared.js';

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
