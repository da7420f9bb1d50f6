import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { createTestDatabase, startTestServer, type TestDatabase, type TestServer } from '../helpers/server.js';

// docs/retention.md, Backup: `ams admin backup FILE` while the service serves, and the restore.
describe('ams admin backup', { timeout: 120_000 }, () => {
  let db: TestDatabase;
  let server: TestServer;
  let restored: TestServer | undefined;
  const folder = mkdtempSync(join(tmpdir(), 'ams-backup-'));
  beforeAll(async () => {
    await ensureBuilt();
    db = await createTestDatabase('sqlite');
    server = await startTestServer({ db });
  }, 180_000);
  afterAll(async () => {
    await restored?.close();
    await server?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('copies the live database under write load: the copy passes integrity_check, holds every message acknowledged before it began, and a server restored on it serves them', async () => {
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    for (let i = 0; i < 50; i++) await sendMessage(api, alice, room.id, `before ${i} ${'x'.repeat(500)}`);

    // Writers keep sending through the backup; every acknowledgement is timed.
    const acknowledged: { id: string; at: number }[] = [];
    let writing = true;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; writing; i++) {
        const sent = await sendMessage(api, alice, room.id, `during ${w}-${i} ${'y'.repeat(500)}`);
        acknowledged.push({ id: sent.id, at: Date.now() });
      }
    });
    while (acknowledged.length < 20) await new Promise((resolve) => setImmediate(resolve));
    const file = join(folder, 'copy.sqlite');
    const began = Date.now();
    const res = await runAms({ DATABASE_URL: db.url }, 'admin', 'backup', file);
    writing = false;
    await Promise.all(writers);
    expect(res.stderr).toMatch(/^ams: database: SQLite \//);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ file, integrity: 'ok', pages: expect.any(Number) });

    const copy = new SQLite(file, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      const stored = new Set((copy.prepare('select id from messages where room_id = ?').all(room.id) as { id: string }[]).map((r) => r.id));
      const before = acknowledged.filter((a) => a.at < began);
      expect(before.length).toBeGreaterThan(0);
      for (const { id } of before) expect(stored.has(id), id).toBe(true);
      expect(stored.size).toBeGreaterThanOrEqual(50 + before.length);
    } finally {
      copy.close();
    }

    // Restore: the copy is the database of a server (stopped first in production, here a second one).
    const again = await runAms({ DATABASE_URL: db.url }, 'admin', 'backup', file);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/exists/);
    restored = await startTestServer({ db: { url: `sqlite:${file}`, drop: () => Promise.resolve() } });
    const history = await new Api(restored.url).get(`/api/v1/rooms/${room.id}/messages?afterSeq=0&limit=100`, { jwt: alice.jwt });
    expect(history.status).toBe(200);
    expect(history.body.messages[0]).toMatchObject({ seq: 1, body: expect.stringMatching(/^before 0 /) });
  });

  it('refuses PostgreSQL (pg_dump is its way) and an in-memory database', async () => {
    const pg = await runAms({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' }, 'admin', 'backup', join(folder, 'pg.sqlite'));
    expect(pg.code).toBe(1);
    expect(pg.stderr).toMatch(/pg_dump/);
    const memory = await runAms({ DATABASE_URL: 'sqlite::memory:' }, 'admin', 'backup', join(folder, 'memory.sqlite'));
    expect(memory.code).toBe(1);
    const missing = await runAms({ DATABASE_URL: db.url }, 'admin', 'backup');
    expect(missing.code).toBe(2);
  });
});
