import type { CompiledQuery, Kysely } from 'kysely';
import type { DB } from './schema.js';
import { SqliteKysely } from './sqlite.js';
import { pauseOf } from './test-pause.js';

/**
 * Writes whose results nobody reads (no row counts, no returned rows), in one transaction, and
 * optionally the transaction's one read of what they left (`lastRead`, run last), whose rows are
 * returned. On SQLite the whole transaction is one message to the writer thread
 * (`SqliteKysely.writeBatch`), not a round trip per statement and one for the commit; on PostgreSQL
 * the statements run one after the other in a transaction, or, when there is only the read (one
 * statement that writes and answers), that statement alone: PostgreSQL runs it as its own
 * transaction, one round trip instead of three. An error of any statement (a unique violation, say)
 * fails the whole with its code, and nothing is written.
 */
export async function commitStatements(db: Kysely<DB>, statements: readonly CompiledQuery[], lastRead?: CompiledQuery): Promise<readonly unknown[]> {
  if (db instanceof SqliteKysely) return db.writeBatch(statements, lastRead);
  if (statements.length === 0 && lastRead !== undefined) return (await db.executeQuery(lastRead)).rows;
  return db.transaction().execute(async (trx) => {
    for (const statement of statements) {
      const pause = pauseOf(statement);
      if (pause !== undefined) await pause();
      else await trx.executeQuery(statement);
    }
    return lastRead === undefined ? [] : (await trx.executeQuery(lastRead)).rows;
  });
}
