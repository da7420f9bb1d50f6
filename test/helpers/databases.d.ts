export interface FreshDatabase {
  /** DATABASE_URL of the new database. */
  url: string;
  /** Deletes it (the folder of a SQLite file; `drop database ... with (force)` on PostgreSQL). */
  drop(): Promise<void>;
}

export function createSqliteDatabase(prefix: string): FreshDatabase;
export function createPostgresDatabase(adminUrl: string, prefix: string): Promise<FreshDatabase>;
