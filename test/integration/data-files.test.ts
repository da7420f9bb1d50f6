import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Api, newAgent } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const modeOf = (path: string): number => statSync(path).mode & 0o777;

// SQLite whatever the suite's dialect: the data folder and its files are the embedded deployment's.
describe('SQLite data files: readable by the service’s user only, whatever the umask', () => {
  let base: string;
  let server: TestServer | undefined;
  let umask: number;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'ams-data-files-'));
    // The usual default, under which files are created 0644 and folders 0755.
    umask = process.umask(0o022);
  });
  afterEach(async () => {
    await server?.close({ keepDatabase: true });
    server = undefined;
    process.umask(umask);
    rmSync(base, { recursive: true, force: true });
  });

  async function start(path: string): Promise<void> {
    // No JWT_SECRET: the service generates one and keeps it in the database (what must stay private).
    server = await startTestServer({
      db: { url: `sqlite:${path}`, drop: () => Promise.resolve() },
      config: { jwtSecret: null },
    });
    // A write, so the WAL and its index exist and hold data.
    await newAgent(new Api(server.url));
  }

  it('creates the data folder 0700 and the database, WAL and SHM files 0600', async () => {
    const folder = join(base, 'data', 'nested');
    const path = join(folder, 'ams.sqlite');
    await start(path);
    expect(modeOf(join(base, 'data')).toString(8)).toBe('700');
    expect(modeOf(folder).toString(8)).toBe('700');
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect({ file, mode: modeOf(file).toString(8) }).toEqual({ file, mode: '600' });
    const secret = await server!.app.ctx.database.db.selectFrom('service_settings').select('value').where('key', '=', 'jwt_secret').executeTakeFirst();
    expect(secret?.value).toEqual(expect.any(String));
  });

  it('tightens the files an older version left readable to all, and leaves a folder it did not create alone', async () => {
    const path = join(base, 'ams.sqlite');
    // As an older version left them: a WAL database whose files are 0644.
    const old = new SQLite(path);
    old.pragma('journal_mode = WAL');
    old.exec('create table leftover (x)');
    old.close();
    writeFileSync(`${path}-wal`, '');
    writeFileSync(`${path}-shm`, '');
    for (const file of [path, `${path}-wal`, `${path}-shm`]) chmodSync(file, 0o644);
    chmodSync(base, 0o755);
    await start(path);
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect({ file, mode: modeOf(file).toString(8) }).toEqual({ file, mode: '600' });
    expect(modeOf(base).toString(8)).toBe('755');
  });
});
