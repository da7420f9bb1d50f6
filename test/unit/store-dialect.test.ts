import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from 'kysely';
import { describe, expect, it } from 'vitest';
import { searchText } from '../../src/core/search-text.js';
import { dialectOf } from '../../src/store/dialect.js';
import { searchTextV1 } from '../../src/store/migrations/005-message-search.js';
import type { DB } from '../../src/store/schema.js';
import { ROOT } from '../helpers/build.js';

/** A Kysely that compiles for `engine` and runs nothing. */
function offline(engine: 'sqlite' | 'postgres'): Kysely<DB> {
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => (engine === 'postgres' ? new PostgresAdapter() : new SqliteAdapter()),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => (engine === 'postgres' ? new PostgresIntrospector(db) : new SqliteIntrospector(db)),
      createQueryCompiler: () => (engine === 'postgres' ? new PostgresQueryCompiler() : new SqliteQueryCompiler()),
    },
  });
}

describe('store dialect', () => {
  it('is chosen by the database and shared by its transactions', async () => {
    for (const engine of ['sqlite', 'postgres'] as const) {
      const db = offline(engine);
      expect(dialectOf(db).name).toBe(engine);
      await db.transaction().execute((trx) => {
        expect(dialectOf(trx)).toBe(dialectOf(db));
        return Promise.resolve();
      });
    }
  });

  it('passes a list of ids as one parameter, whatever its length', () => {
    const compiled = (engine: 'sqlite' | 'postgres', ids: string[]) => {
      const db = offline(engine);
      const dialect = dialectOf(db);
      return db.selectFrom('rooms as r').select('r.id').where(dialect.inIdList('r.id', dialect.idList(ids))).compile();
    };
    const sqlite = compiled('sqlite', ['a', 'b', 'c']);
    expect(sqlite.sql).toBe('select "r"."id" from "rooms" as "r" where "r"."id" in (select value from json_each(?))');
    expect(sqlite.parameters).toEqual(['["a","b","c"]']);
    const postgres = compiled('postgres', ['a', 'b']);
    expect(postgres.sql).toBe('select "r"."id" from "rooms" as "r" where "r"."id" = any($1::uuid[])');
    expect(postgres.parameters).toEqual([['a', 'b']]);
  });

  it('locks claimed rows on PostgreSQL only', () => {
    const claim = (engine: 'sqlite' | 'postgres') => {
      const db = offline(engine);
      return dialectOf(db).forClaim(db.selectFrom('webhook_deliveries').select('id').limit(5)).compile().sql;
    };
    expect(claim('postgres')).toMatch(/for update skip locked$/);
    expect(claim('sqlite')).not.toMatch(/for update/);
  });
});

describe('migrations are frozen', () => {
  const folder = join(ROOT, 'src/store/migrations');

  it('import nothing but packages and each other', () => {
    const outside = readdirSync(folder)
      .filter((name) => name.endsWith('.ts'))
      .flatMap((name) => [...readFileSync(join(folder, name), 'utf8').matchAll(/from\s+'([^']+)'/g)].map((m) => `${name}: ${m[1]!}`))
      .filter((line) => /: \.\.\//.test(line));
    expect(outside).toEqual([]);
  });

  it("migration 005's folding is still the live one (else a new migration must rebuild the index)", () => {
    const samples = [
      'Deploy the CAFÉ build to staging, v2.0-beta!',
      'user@example.com snake_case kebab-case',
      '🚀 launch!!! 日本語 東京 Ǆemal ﬁne x² ＦＵＬＬ',
      'İstanbul ﷺ Straße ÅNGSTRÖM',
      `${'a'.repeat(250)} ${'é'.repeat(250)} ${'𝒜'.repeat(210)}`,
      '',
      '   ...   ',
    ];
    for (const body of samples) expect(searchTextV1(body), body).toBe(searchText(body));
  });
});
