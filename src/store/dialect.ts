import { PostgresAdapter, sql, type RawBuilder, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Dialect } from './database-handle.js';
import type { DB, Db } from './schema.js';

/**
 * Every difference between SQLite and PostgreSQL that the store's queries see, in one place: an
 * interface, one implementation per engine, chosen once per database by its Kysely adapter (a
 * transaction shares its database's adapter). Stores ask `dialectOf(db)`; services never see which
 * engine they run on. The migrations keep their own frozen helper (migrations/column-types.ts):
 * history must not change when this module does.
 *
 * What is the same on both engines is written once with Kysely as usual: upserts (`on conflict`),
 * `returning`, keyset pages, `update ... from`. What differs:
 * - a list of ids as ONE parameter, so that a prepared query (prepared.ts) compiles once whatever
 *   the list's length: a JSON array read with `json_each` on SQLite, a `uuid[]` on PostgreSQL;
 * - full-text search over `message_search` (migration 005): an FTS5 MATCH expression on SQLite, a
 *   tsquery under the GIN index plus LIKE checks for phrases on PostgreSQL;
 * - row locks for a claim: `FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite has one writer;
 * - a lock on a key until the transaction ends: an advisory lock on PostgreSQL; nothing on SQLite,
 *   whose write transactions are serialised already.
 */
export interface StoreDialect {
  readonly name: Dialect;
  /** `column` (a uuid column, `alias.column` allowed) is one of the ids given as `list`, one parameter. */
  inIdList(column: string, list: unknown): RawBuilder<boolean>;
  /** The value to pass as `inIdList`'s parameter. */
  idList(ids: readonly string[]): unknown;
  /** The conditions, on `message_search as s`, that select the entries matching `query` (all must hold). */
  fullTextMatch(query: FullTextQuery): RawBuilder<boolean>[];
  /** Rows selected for a claim: locked, those already locked by another transaction skipped. */
  forClaim<D, T extends keyof D, O>(query: SelectQueryBuilder<D, T, O>): SelectQueryBuilder<D, T, O>;
  /** Serialises the transactions that take the same `key` until each ends. */
  lockKey(trx: Transaction<DB>, key: string): Promise<void>;
}

/**
 * A parsed search, as the index's words (core/search/search-query.ts parses the user's text into
 * it): every `include` term must match, no `exclude` term may. A term is one word (matched as a
 * prefix when `prefix`) or a phrase (its words adjacent, in order). Words are folded like the index
 * (letters and digits only) and never empty.
 */
export interface FullTextTerm {
  readonly words: readonly string[];
  readonly prefix: boolean;
}

export interface FullTextQuery {
  readonly include: readonly FullTextTerm[];
  readonly exclude: readonly FullTextTerm[];
}

// ------------------------------------------------------------------ SQLite

const ftsString = (words: readonly string[]): string => `"${words.join(' ').replaceAll('"', '""')}"`;
const ftsTerm = (term: FullTextTerm): string => ftsString(term.words) + (term.prefix ? '*' : '');

/**
 * The FTS5 MATCH expression: `("a" AND "b"* AND "c d") NOT "e" NOT "f"*`. Every word is a quoted
 * string, so FTS5 keywords and syntax in the user's text are inert.
 */
export function toFts5Match(query: FullTextQuery): string {
  let expression = `(${query.include.map(ftsTerm).join(' AND ')})`;
  for (const term of query.exclude) expression = `(${expression} NOT ${ftsTerm(term)})`;
  return expression;
}

const sqlite: StoreDialect = {
  name: 'sqlite',
  inIdList: (column, list) => sql<boolean>`${sql.ref(column)} in (select value from json_each(${list}))`,
  idList: (ids) => JSON.stringify(ids),
  fullTextMatch: (query) => [sql<boolean>`s.message_search match ${toFts5Match(query)}`],
  forClaim: (query) => query,
  lockKey: () => Promise.resolve(),
};

// ------------------------------------------------------------------ PostgreSQL

export interface PostgresSearch {
  /** tsquery text (every lexeme quoted) for the GIN index: the words of every included term, exclusions of single words. */
  tsquery: string;
  /** LIKE patterns the padded index text must match (phrases), and must not match (excluded phrases). */
  phrases: string[];
  excludedPhrases: string[];
}

const tsLexeme = (word: string): string => `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
const likeEscape = (text: string): string => text.replace(/[\\%_]/g, '\\$&');
/** Matches ` w1 w2 ` inside the index text padded with a space on each side. */
const phrasePattern = (words: readonly string[]): string => `% ${likeEscape(words.join(' '))} %`;

/**
 * The PostgreSQL form. The index is a tsvector of the message's words without positions (built from
 * the stored text, see migration 005), so phrases are checked on the stored text itself: exact
 * adjacency, as FTS5 does it, with no limit on positions or repeats.
 */
export function toPostgresSearch(query: FullTextQuery): PostgresSearch {
  const parts: string[] = [];
  const phrases: string[] = [];
  const excludedPhrases: string[] = [];
  for (const term of query.include) {
    for (const word of term.words) parts.push(tsLexeme(word) + (term.prefix ? ':*' : ''));
    if (term.words.length > 1) phrases.push(phrasePattern(term.words));
  }
  for (const term of query.exclude) {
    if (term.words.length > 1) excludedPhrases.push(phrasePattern(term.words));
    else parts.push(`!${tsLexeme(term.words[0]!)}${term.prefix ? ':*' : ''}`);
  }
  return { tsquery: parts.join(' & '), phrases, excludedPhrases };
}

const postgres: StoreDialect = {
  name: 'postgres',
  inIdList: (column, list) => sql<boolean>`${sql.ref(column)} = any(${list}::uuid[])`,
  idList: (ids) => ids,
  fullTextMatch(query) {
    const pg = toPostgresSearch(query);
    return [
      sql<boolean>`s.tsv @@ cast(${pg.tsquery} as tsquery)`,
      ...pg.phrases.map((pattern) => sql<boolean>`(' ' || s.words || ' ') like ${pattern}`),
      ...pg.excludedPhrases.map((pattern) => sql<boolean>`(' ' || s.words || ' ') not like ${pattern}`),
    ];
  },
  forClaim: (query) => query.forUpdate().skipLocked(),
  async lockKey(trx, key) {
    // A hash of the key: a collision only serialises two unrelated transactions.
    await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
  },
};

// ------------------------------------------------------------------ choice

/** Per Kysely adapter: one per database, shared by its transactions. */
const chosen = new WeakMap<object, StoreDialect>();

/** The engine `db` (a database or one of its transactions) runs on. */
export function dialectOf(db: Db): StoreDialect {
  const { adapter } = db.getExecutor();
  let dialect = chosen.get(adapter);
  if (dialect === undefined) {
    dialect = adapter instanceof PostgresAdapter ? postgres : sqlite;
    chosen.set(adapter, dialect);
  }
  return dialect;
}
