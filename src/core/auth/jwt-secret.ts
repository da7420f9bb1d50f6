import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';

/**
 * The configured JWT_SECRET, or (SQLite only) one generated on first start and kept in the database,
 * so restarts on the same file keep sessions valid.
 */
export async function resolveJwtSecret(db: Kysely<DB>, configured: string | null): Promise<string> {
  if (configured !== null) return configured;
  await db
    .insertInto('service_settings')
    .values({ key: 'jwt_secret', value: randomBytes(48).toString('base64url') })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const row = await db.selectFrom('service_settings').select('value').where('key', '=', 'jwt_secret').executeTakeFirstOrThrow();
  return row.value;
}
