import { CompiledQuery, createQueryId, type Compilable, type QueryResult, type RootOperationNode } from 'kysely';
import type { Db } from './schema.js';

/** A mistake in a prepared query's definition, found when it is first compiled. */
export class PreparedQueryError extends Error {
  override name = 'PreparedQueryError';
}

/**
 * What the builder receives in place of a parameter's value while the query is compiled: an
 * object found again by identity among the compiled parameters. Turning it into a primitive
 * (arithmetic, a template string, an identifier) means it was not used as a value: refused.
 */
class Placeholder {
  constructor(readonly key: string) {}

  [Symbol.toPrimitive](): never {
    throw new PreparedQueryError(`prepared query: parameter "${this.key}" is used as something other than a value (in a computation, a literal or a name)`);
  }
}

/** Where each compiled parameter comes from on a run: a parameter's key, or a constant of the query. */
interface Compiled {
  sql: string;
  query: RootOperationNode;
  keys: (string | null)[];
  constants: unknown[];
}

function compile<P extends object>(db: Db, build: (db: Db, p: P) => Compilable<unknown>, given: P): Compiled {
  const read = new Set<string>();
  const placeholders = new Proxy({} as P, {
    get(_target, key) {
      if (typeof key !== 'string') return undefined;
      read.add(key);
      return new Placeholder(key);
    },
  });
  let query: CompiledQuery<unknown>;
  try {
    query = build(db, placeholders).compile();
  } catch (err) {
    if (err instanceof PreparedQueryError) throw err;
    // Kysely choked on a placeholder where it wanted a name or an immediate value.
    throw new PreparedQueryError(`prepared query: a parameter (${[...read].join(', ')}) is used where a name or a literal is expected: ${(err as Error).message}`, { cause: err });
  }
  const keys = query.parameters.map((value) => (value instanceof Placeholder ? value.key : null));
  const constants = query.parameters.map((value) => (value instanceof Placeholder ? undefined : value));
  const bound = new Set(keys);
  for (const key of read) {
    if (!bound.has(key)) throw new PreparedQueryError(`prepared query: parameter "${key}" is read but is not a value of the query (${query.sql})`);
  }
  for (const key of Object.keys(given)) {
    if (!read.has(key)) throw new PreparedQueryError(`prepared query: parameter "${key}" is given but the query does not use it (${query.sql})`);
  }
  return { sql: query.sql, query: CompiledQuery.raw(query.sql).query, keys, constants };
}

/**
 * A Kysely query built and compiled once per dialect, then run with fresh parameters: the one way
 * to write a hot query (the rest of the store uses Kysely as usual). Kysely otherwise rebuilds its
 * query tree and recompiles the same SQL on every call; on the hot paths (a message sent, a
 * history page, a session exchange) that costs as much as running the statement.
 *
 * The query is written as usual; its parameters are declared once, with their types, as the
 * builder's second argument, and are used as values only:
 *
 *   const page = prepared((db, p: { roomId: string; rows: number }) =>
 *     db.selectFrom('messages').selectAll().where('room_id', '=', p.roomId).limit(p.rows));
 *   const { rows } = await page(db, { roomId, rows: 51 }); // rows: Selectable<MessagesTable>[]
 *
 * While compiling, each `p.x` is a placeholder object that Kysely puts among the statement's
 * parameters; it is found again there by identity. The first run checks the definition against the
 * parameters given (pass them as an object literal) and throws a PreparedQueryError when one is
 * unused or used other than as a value (an identifier, a computation, a branch).
 *
 * It runs through `db.executeQuery`, so the database decides how: on SQLite the root database runs
 * it straight on the connection while Kysely is not using it (see sqlite.ts). `.compile(db, params)`
 * gives the compiled query without running it (a group commit's last read, see write-batcher.ts).
 */
export interface PreparedQuery<P extends object, O> {
  (db: Db, params: P): Promise<QueryResult<O>>;
  compile(db: Db, params: P): CompiledQuery<O>;
}

export function prepared<P extends object, O>(build: (db: Db, p: P) => Compilable<O>): PreparedQuery<P, O> {
  // Per dialect adapter: a transaction shares its database's adapter.
  const compiled = new WeakMap<object, Compiled>();
  const compileFor = (db: Db, params: P): CompiledQuery<O> => {
    const { adapter } = db.getExecutor();
    let entry = compiled.get(adapter);
    if (entry === undefined) {
      entry = compile(db, build, params);
      compiled.set(adapter, entry);
    }
    const { keys, constants } = entry;
    const values = params as Record<string, unknown>;
    const parameters: unknown[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      parameters[i] = key === null ? constants[i] : values[key];
    }
    // The output type is the builder's own: the SQL is the one it compiled to.
    return { sql: entry.sql, query: entry.query, parameters, queryId: createQueryId() };
  };
  const run = (db: Db, params: P): Promise<QueryResult<O>> => {
    let query: CompiledQuery<O>;
    try {
      query = compileFor(db, params);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return db.executeQuery(query);
  };
  return Object.assign(run, { compile: compileFor });
}
