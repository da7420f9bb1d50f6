import type SQLite from 'better-sqlite3';
import type { SqliteStatement as KyselySqliteStatement } from 'kysely';

/** A statement as the driver uses it: Kysely's shape, and whether it only reads (read connection). */
export type SqliteStatement = KyselySqliteStatement & { readonly readonly: boolean };

/**
 * Part of the SQLite driver, not an API for store code: the read connection's better-sqlite3
 * handle as the driver in sqlite.ts uses it, made faster in two ways, both invisible to queries:
 * - Statements are kept by SQL text: Kysely prepares every query anew, and parsing and planning
 *   cost as much as running a small query. Bounded (the service has a few dozen query shapes,
 *   `in (...)` lists of varying length aside); safe because the read connection runs its
 *   statements synchronously, one at a time, so a statement is never reused while it is still
 *   running (streaming a query, which nothing does, would break that). Off until the
 *   migrations have run, so no statement outlives a schema change.
 * - Rows are read as arrays and made objects in JS: better-sqlite3 sets each property of each row
 *   through the V8 API, which costs more than the query itself on a page of 50 messages.
 */
export function fastSqlite(handle: SQLite.Database, max = 256): { prepare(text: string): SqliteStatement; enableCache(): void } {
  const statements = new Map<string, SqliteStatement>();
  let caching = false;
  return {
    enableCache() {
      caching = true;
    },
    prepare(text: string): SqliteStatement {
      let statement = statements.get(text);
      if (statement === undefined) {
        statement = rowsAsArrays(handle.prepare(text));
        if (!caching) return statement;
        if (statements.size >= max) statements.delete(statements.keys().next().value as string);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

function rowsAsArrays(statement: SQLite.Statement): SqliteStatement {
  if (!statement.reader) return statement;
  statement.raw(true);
  const columns = statement.columns().map((c) => c.name);
  const toRow = (values: unknown[]): Record<string, unknown> => {
    const row: Record<string, unknown> = {};
    // Same keys as better-sqlite3's own objects; a repeated name keeps the last value, as there.
    for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
    return row;
  };
  return {
    reader: true,
    readonly: statement.readonly,
    all: (parameters) => (statement.all(parameters) as unknown[][]).map(toRow),
    run: (parameters) => statement.run(parameters),
    *iterate(parameters) {
      for (const values of statement.iterate(parameters) as IterableIterator<unknown[]>) yield toRow(values);
    },
  };
}
