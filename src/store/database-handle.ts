import type { Kysely } from 'kysely';
import type { DB } from './schema.js';

/**
 * An open database as its users see it, whichever the engine: its own module, so that the engines
 * (sqlite.ts) and the migrations depend on it without depending on database.ts, which opens them.
 */
export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /** Called once the migrations have run (SQLite: starts reusing prepared statements). */
  migrated?(): void;
  /**
   * Called (often: once per failed query) while the database is away; PostgreSQL only (SQLite is a
   * local file). The position check then runs once it answers again (docs/catch-up.md).
   */
  onUnavailable?(listener: () => void): void;
  /** Throws when the database cannot answer `select 1`. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
