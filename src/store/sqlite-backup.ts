import { existsSync } from 'node:fs';
import SQLite from 'better-sqlite3';

/**
 * `ams admin backup` on SQLite (docs/retention.md, Backup): SQLite's online backup API copies the
 * database while the service keeps writing to it. A write committed by another connection during
 * the copy restarts it, so after a first small step the rest is copied in one step: a read
 * transaction, which in WAL mode writers do not wait for, gives a consistent snapshot that no
 * write can restart. The copy is then checked with `PRAGMA integrity_check`.
 */
export async function backupSqlite(source: string, destination: string): Promise<{ pages: number; integrity: string }> {
  if (existsSync(destination)) throw new Error(`${destination} exists: choose a new file (a backup never overwrites)`);
  const db = new SQLite(source, { fileMustExist: true });
  try {
    // The service's writes wait for nothing here; this connection waits for theirs at most this long.
    db.pragma('busy_timeout = 10000');
    const { totalPages } = await db.backup(destination, { progress: () => Number.MAX_SAFE_INTEGER });
    const copy = new SQLite(destination, { readonly: true });
    try {
      const integrity = String(copy.pragma('integrity_check', { simple: true }));
      return { pages: totalPages, integrity };
    } finally {
      copy.close();
    }
  } finally {
    db.close();
  }
}
