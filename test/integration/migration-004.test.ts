import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { afterEach, describe, expect, it } from 'vitest';
import { initialSchema } from '../../src/store/migrations/001-initial-schema.js';
import { partialClientMsgIdIndex } from '../../src/store/migrations/002-partial-client-msg-id-index.js';
import { Api } from '../helpers/api.js';
import { createTestDatabase, startTestServer, TEST_DIALECT, type TestDatabase, type TestServer } from '../helpers/server.js';

// Migration 004 on a database that already holds messages (docs/catch-up.md): existing
// messages are numbered per room in id order, rooms get their lastSeq, memberships start there.

function openRaw(db: TestDatabase): Kysely<unknown> {
  return db.url.startsWith('sqlite:')
    ? new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(db.url.slice('sqlite:'.length)) }) })
    : new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: db.url, max: 1 }) }) });
}

describe('migration 004 (seq, lastSeq, readSeq) on existing data', () => {
  let database: TestDatabase | undefined;
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    database = undefined;
  });

  it('numbers existing messages in id order per room; memberships start at their room\'s lastSeq', async () => {
    database = await createTestDatabase();
    const raw = openRaw(database);
    const phase1: Record<string, Migration> = { '001-initial-schema': initialSchema(TEST_DIALECT), '002-partial-client-msg-id-index': partialClientMsgIdIndex };
    const { error } = await new Migrator({ db: raw, provider: { getMigrations: () => Promise.resolve(phase1) } }).migrateToLatest();
    expect(error).toBeUndefined();

    const now = new Date().toISOString();
    const [admin, alice, bob] = [uuidv7(), uuidv7(), uuidv7()];
    const [busy, quiet] = [uuidv7(), uuidv7()];
    const ids = Array.from({ length: 7 }, () => uuidv7()); // time-ordered
    await sql`insert into agents (id, name, display_name, role, created_at) values
      (${admin}, 'admin-m', 'Admin', 'admin', ${now}), (${alice}, 'alice-m', 'Alice', 'agent', ${now}), (${bob}, 'bob-m', 'Bob', 'agent', ${now})`.execute(raw);
    await sql`insert into rooms (id, slug, name, created_by, created_at) values
      (${busy}, 'busy', 'Busy', ${admin}, ${now}), (${quiet}, 'quiet', 'Quiet', ${admin}, ${now})`.execute(raw);
    await sql`insert into room_members (room_id, agent_id, joined_at) values
      (${busy}, ${alice}, ${now}), (${busy}, ${bob}, ${now}), (${quiet}, ${alice}, ${now})`.execute(raw);
    // Inserted out of order, in two rooms: numbering follows the ids, per room.
    const rows: [string, string, string][] = [[ids[3]!, busy, bob], [ids[0]!, busy, alice], [ids[5]!, busy, bob], [ids[1]!, quiet, alice], [ids[2]!, busy, alice], [ids[4]!, quiet, alice], [ids[6]!, busy, alice]];
    for (const [id, roomId, sender] of rows) {
      await sql`insert into messages (id, room_id, sender_id, body, created_at) values (${id}, ${roomId}, ${sender}, ${`m ${id}`}, ${now})`.execute(raw);
    }
    await raw.destroy();

    server = await startTestServer({ db: database });
    const api = new Api(server.url);
    const rooms = (await api.get('/rooms')).body as { id: string; lastSeq: number }[];
    expect(Object.fromEntries(rooms.map((r) => [r.id, r.lastSeq]))).toEqual({ [busy]: 5, [quiet]: 2 });
    const token = await api.post(`/api/v1/agents/${bob}/tokens`, { scopes: {} });
    const jwt = (await api.post('/api/v1/sessions', { apiToken: token.body.token })).body.token as string;
    const busyPage = await api.get(`/api/v1/rooms/${busy}/messages?afterSeq=0`, { jwt });
    expect(busyPage.body.messages.map((m: { id: string; seq: number }) => [m.id, m.seq])).toEqual([[ids[0], 1], [ids[2], 2], [ids[3], 3], [ids[5], 4], [ids[6], 5]]);
    const quietPage = await api.get(`/api/v1/rooms/${quiet}/messages?afterSeq=0`, { jwt });
    expect(quietPage.body.messages.map((m: { id: string; seq: number }) => m.seq)).toEqual([1, 2]);
    // Old history is not unread.
    const listed = (await api.get('/api/v1/rooms', { jwt })).body.rooms as { id: string; readSeq?: number; unreadCount?: number }[];
    expect(listed.find((r) => r.id === busy)).toMatchObject({ readSeq: 5, unreadCount: 0 });
    // The next message continues the numbering.
    const next = await api.post(`/api/v1/rooms/${busy}/messages`, { body: 'after the migration' }, { jwt });
    expect(next.body.seq).toBe(6);
  });
});
