import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { auditEntriesStatement, auditStatement, listAudit, recordAudit } from '../../src/core/audit/audit.store.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { ROOT } from '../helpers/build.js';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the audit writer', () => {
  let database: Database;

  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
  });
  afterEach(() => database.close());

  it('is the only code that names the audit table (besides its type and its migration)', () => {
    const naming = sourceFiles(join(ROOT, 'src'))
      .filter((file) => readFileSync(file, 'utf8').includes('audit_log'))
      .map((file) => relative(ROOT, file))
      .filter((file) => !file.startsWith('src/store/migrations/'));
    expect(naming.sort()).toEqual(['src/core/audit/audit.store.ts', 'src/store/schema.ts']);
  });

  it('writes the same record in a transaction, as a statement and as a multi-row statement', async () => {
    const actorId = randomUUID();
    await recordAudit(database.db, { event: 'room-created', actorId, subjectId: 'in-a-call' });
    await database.db.transaction().execute((trx) => recordAudit(trx, { event: 'room-created', actorId, subjectId: 'in-a-transaction', detail: { slug: 's' } }));
    await database.db.executeQuery(auditStatement(database.db, { event: 'room-created', actorId, subjectId: 'as-a-statement' }));
    await database.db.executeQuery(auditEntriesStatement(database.db, [{ event: 'room-created', actorId, subjectId: 'several-at-once' }]));
    const records = await listAudit(database.db, 'room-created');
    expect(records.map((r) => r.subjectId)).toEqual(['several-at-once', 'as-a-statement', 'in-a-transaction', 'in-a-call']);
    for (const record of records) {
      expect(record.actorId).toBe(actorId);
      expect(record.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
      expect(new Date(record.createdAt).toISOString()).toBe(record.createdAt);
    }
    expect(records.map((r) => r.detail)).toEqual([{}, {}, { slug: 's' }, {}]);
  });
});
