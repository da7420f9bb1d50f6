import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { sleep } from '../helpers/wait.js';

describe('SQLite WAL checkpoints on a worker thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ams-ckpt-'));
  let database: Database | undefined;
  afterEach(async () => {
    await database?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('moves committed pages into the database file soon after the commits, not at 1000 pages', async () => {
    const path = join(dir, 'ams.sqlite');
    database = await openDatabase({ kind: 'sqlite', path }, { error: () => undefined });
    const before = statSync(path).size;
    // About 400 KiB in 100 small transactions: a few hundred WAL frames, far below any automatic threshold.
    for (let i = 0; i < 100; i++) {
      await database.db.insertInto('service_settings').values({ key: `k${i}`, value: 'x'.repeat(4000) }).execute();
    }
    let grown = false;
    for (let i = 0; i < 100 && !grown; i++) {
      grown = statSync(path).size >= before + 350 * 1024;
      if (!grown) await sleep(50);
    }
    expect(grown).toBe(true);
    const rows = await database.db.selectFrom('service_settings').select('key').where('key', 'like', 'k%').execute();
    expect(rows).toHaveLength(100);
  });

  it('stops with the database', async () => {
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'closing.sqlite') }, { error: () => undefined });
    await database.close();
    database = undefined;
  });
});
