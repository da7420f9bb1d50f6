import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Fresh, empty databases for tests and the bench: a SQLite file in its own temporary folder, or a
 * PostgreSQL database created through the cluster's admin URL; `drop()` removes either.
 *
 * Plain JavaScript with a .d.ts beside it, like processes.js: the bench runs without a build step.
 */

export function createSqliteDatabase(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  return { url: `sqlite:${join(dir, 'ams.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

export async function createPostgresDatabase(adminUrl, prefix) {
  const name = `${prefix.replace(/\W/g, '_')}_${randomBytes(6).toString('hex')}`;
  const run = async (statement) => {
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end().catch(() => {});
    }
  };
  await run(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}
