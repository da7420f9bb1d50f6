import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { claimDue } from '../../src/core/webhooks/webhooks.store.js';
import { openDatabase, type Database } from '../../src/store/database.js';

// The delivery worker claims every second on every node. A claim is a write transaction; on SQLite
// every group commit of messages waits while one holds the writer (docs/benchmarks.md: the
// once-a-second stalls of scenario 1). With nothing due it must not take the writer at all.
describe('webhook claims', () => {
  let dir: string;
  let database: Database;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ams-claims-'));
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'ams.sqlite') }, { error: () => undefined });
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds nothing due without a transaction: no statement reaches the SQLite writer thread', async () => {
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    try {
      const now = new Date().toISOString();
      const claimed = await claimDue(database.db, now, new Date(Date.now() + 60_000).toISOString(), 16);
      expect(claimed).toEqual([]);
      expect(posted).not.toHaveBeenCalled();
    } finally {
      posted.mockRestore();
    }
  });

  it('answers at once while a long transaction holds the writer', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const transaction = database.db.transaction().execute(async (trx) => {
      await trx.insertInto('service_settings').values({ key: 'holding', value: 'the writer' }).execute();
      await held;
    });
    try {
      const claimed = await Promise.race([
        claimDue(database.db, new Date().toISOString(), new Date(Date.now() + 60_000).toISOString(), 16),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 1000)),
      ]);
      expect(claimed).toEqual([]);
    } finally {
      release();
      await transaction;
    }
  });
});
