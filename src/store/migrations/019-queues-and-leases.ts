import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Work queues and leases (docs/tasks.md, docs/leases.md).
 * - `tasks` gains a queue: `queue_id` (the room whose members may claim it), `assignee_id` null until
 *   a claim, `lease_expires_at` and `lease_seconds` (the claimer's lease, renewed by its moves and
 *   heartbeats), `attempts` / `max_attempts` (claims so far, and how many before it fails) and
 *   `claim` (grows with every claim: a fencing number). SQLite cannot drop a NOT NULL: the table is
 *   copied into a new one, as its documentation advises.
 * - `task_history.reason`: why a move was made without a mover (`lease-expired`), or `claimed`.
 * - `leases`: the live leases on resources, a row per lease, deleted when released or expired.
 *   `lease_rooms.fence` counts the leases granted in a room; its row is also what serialises the
 *   grants of one room (a locking upsert on PostgreSQL; SQLite has one writer).
 */
export function queuesAndLeases(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      if (engine === 'postgres') {
        await sql`alter table tasks alter column assignee_id drop not null`.execute(db);
      } else {
        await sql`create table tasks_copy (
          id text primary key, kind text not null, title text not null, requester_id text not null, assignee_id text,
          room_id text not null, state text not null, terminal integer not null default 0, result text, due_at text,
          client_task_id text, version integer not null default 0, created_at text not null, updated_at text not null)`.execute(db);
        await sql`insert into tasks_copy select id, kind, title, requester_id, assignee_id, room_id, state, terminal, result, due_at,
          client_task_id, version, created_at, updated_at from tasks`.execute(db);
        await sql`drop table tasks`.execute(db);
        await sql`alter table tasks_copy rename to tasks`.execute(db);
        await sql`create unique index tasks_client_task_id_uq on tasks (requester_id, client_task_id) where client_task_id is not null`.execute(db);
        await sql`create index tasks_assignee_updated_idx on tasks (assignee_id, updated_at, id)`.execute(db);
        await sql`create index tasks_requester_updated_idx on tasks (requester_id, updated_at, id)`.execute(db);
        await sql`create index tasks_due_idx on tasks (due_at) where terminal = 0`.execute(db);
      }
      await db.schema.alterTable('tasks').addColumn('queue_id', t.uuid).execute();
      await db.schema.alterTable('tasks').addColumn('lease_expires_at', t.timestamp).execute();
      await db.schema.alterTable('tasks').addColumn('lease_seconds', 'integer').execute();
      await db.schema.alterTable('tasks').addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('tasks').addColumn('max_attempts', 'integer', (c) => c.notNull().defaultTo(3)).execute();
      await db.schema.alterTable('tasks').addColumn('claim', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('task_history').addColumn('reason', 'text').execute();
      // The oldest unclaimed task of a queue; the queue's tasks by updatedAt; the leases running out.
      await db.schema.createIndex('tasks_queue_open_idx').on('tasks').columns(['queue_id', 'created_at', 'id'])
        .where(sql.ref('assignee_id'), 'is', null).execute();
      await db.schema.createIndex('tasks_queue_updated_idx').on('tasks').columns(['queue_id', 'updated_at', 'id'])
        .where(sql.ref('queue_id'), 'is not', null).execute();
      await db.schema.createIndex('tasks_lease_idx').on('tasks').column('lease_expires_at')
        .where(sql.ref('lease_expires_at'), 'is not', null).execute();

      await db.schema
        .createTable('leases')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('room_id', t.uuid, (c) => c.notNull())
        .addColumn('resource', 'text', (c) => c.notNull())
        .addColumn('holder_id', t.uuid, (c) => c.notNull())
        .addColumn('exclusive', 'integer', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('fence', 'bigint', (c) => c.notNull())
        .addColumn('client_lease_id', 'text')
        .addColumn('expires_at', t.timestamp, (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('leases_room_idx').on('leases').columns(['room_id', 'resource']).execute();
      await db.schema.createIndex('leases_expires_idx').on('leases').column('expires_at').execute();
      await db.schema.createIndex('leases_client_uq').on('leases').columns(['room_id', 'holder_id', 'client_lease_id']).unique()
        .where(sql.ref('client_lease_id'), 'is not', null).execute();
      await db.schema
        .createTable('lease_rooms')
        .addColumn('room_id', t.uuid, (c) => c.primaryKey())
        .addColumn('fence', 'bigint', (c) => c.notNull())
        .execute();
    },
  };
}
