import { CompiledQuery, type Compilable, type Kysely, type QueryResult, type Transaction } from 'kysely';
import type { DB } from './schema.js';

type Db = Kysely<DB> | Transaction<DB>;

/**
 * Runs a compiled statement at once on a database's connection, or returns undefined when it
 * cannot (the connection is in use or locked): the query then takes Kysely's usual path.
 */
export type DirectRunner = (sql: string, parameters: readonly unknown[]) => QueryResult<unknown> | undefined;

const directRunners = new WeakMap<Kysely<DB>, DirectRunner>();

/** Lets `prepared` queries on `db` (not on its transactions) skip Kysely's executor (SQLite). */
export function registerDirectRunner(db: Kysely<DB>, run: DirectRunner): void {
  directRunners.set(db, run);
}

/**
 * A Kysely query built and compiled once per dialect, then run with fresh parameters. Kysely
 * otherwise rebuilds its query tree and recompiles the same SQL on every call; on the hot paths
 * (a message sent, a history page) that costs as much as running the statement. The query is
 * written as usual, with its parameters as the builder's arguments: they are compiled as
 * placeholders and mapped back by position, so only values (never identifiers or shapes) may
 * depend on them.
 *
 * On SQLite the statement runs straight on the connection when Kysely is not using it (see
 * sqlite.ts): its executor's connection mutex, plugin hooks and promise hops cost more than a
 * small statement itself (on a session exchange, 0.15 to 0.35 ms of the event loop's 0.65 to 0.95).
 */
export function prepared<A extends unknown[]>(arity: number, build: (db: Db, ...args: A) => Compilable): (db: Db, ...args: A) => Promise<QueryResult<unknown>> {
  // Per dialect adapter: a transaction shares its database's adapter.
  const compiled = new WeakMap<object, { sql: string; order: number[] }>();
  return (db, ...args) => {
    const { adapter } = db.getExecutor();
    let entry = compiled.get(adapter);
    if (entry === undefined) {
      const markers = Array.from({ length: arity }, (_, i) => `\u0000ams-parameter-${i}\u0000`);
      const query = build(db, ...(markers as A)).compile();
      const order = query.parameters.map((p) => markers.indexOf(p as string));
      if (order.some((i) => i < 0) || new Set(order).size !== arity || order.length !== arity) {
        throw new Error(`prepared query: every one of the ${arity} arguments must be one parameter (${query.sql})`);
      }
      entry = { sql: query.sql, order };
      compiled.set(adapter, entry);
    }
    const parameters = entry.order.map((i) => args[i]);
    const direct = directRunners.get(db as Kysely<DB>);
    if (direct !== undefined) {
      try {
        const result = direct(entry.sql, parameters);
        if (result !== undefined) return Promise.resolve(result);
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }
    return db.executeQuery(CompiledQuery.raw(entry.sql, parameters));
  };
}
