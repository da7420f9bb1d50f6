import type { CompiledQuery, Kysely } from 'kysely';
import type { DB } from './schema.js';
import { SqliteKysely } from './sqlite.js';

/**
 * Writes whose results nobody reads (no row counts, no returned rows), in one transaction. On
 * SQLite the whole transaction is one message to the writer thread (`SqliteKysely.writeBatch`), not
 * a round trip per statement and one for the commit; on PostgreSQL the statements run one after the
 * other in a transaction. An error of any statement (a unique violation, say) fails the whole with
 * its code, and nothing is written.
 */
export async function commitStatements(db: Kysely<DB>, statements: readonly CompiledQuery[]): Promise<void> {
  if (db instanceof SqliteKysely) {
    await db.writeBatch(statements);
    return;
  }
  await db.transaction().execute(async (trx) => {
    for (const statement of statements) await trx.executeQuery(statement);
  });
}
