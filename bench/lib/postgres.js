import { createPostgresDatabase } from '../../test/helpers/databases.js';

export const PG_ADMIN_URL = process.env.AMS_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh PostgreSQL database for the run ({url, drop}), or {error} with the reason. */
export async function createDatabase() {
  try {
    return await createPostgresDatabase(PG_ADMIN_URL, 'ams_bench');
  } catch (err) {
    return { error: `PostgreSQL not reachable at ${PG_ADMIN_URL}: ${err.message}` };
  }
}
