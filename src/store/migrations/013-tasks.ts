import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Tasks and approvals (docs/tasks.md).
 * - `tasks`: one row per task. `version` grows by one at every move: a move is one conditional
 *   UPDATE ... WHERE state = <read> AND version = <read>, so of two racing moves (on any nodes, an
 *   expiry included) exactly one changes a row and the other is refused. `client_task_id` makes a
 *   repeated create by the same requester find the original (unique where given).
 * - `task_history`: the task's states in order (`n` from 0, the creation), each naming the message
 *   its move posted; `by_id` is null for the expiry.
 * - `messages.task`: `{id, kind, title, state}` of the task a message was posted for, `state` the one
 *   that move set, kept with the message (JSON) so that its `task` field never changes afterwards.
 */
export function tasks(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('tasks')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('requester_id', t.uuid, (c) => c.notNull())
        .addColumn('assignee_id', t.uuid, (c) => c.notNull())
        .addColumn('room_id', t.uuid, (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('terminal', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('result', t.json)
        .addColumn('due_at', t.timestamp)
        .addColumn('client_task_id', 'text')
        .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('tasks_client_task_id_uq')
        .on('tasks')
        .columns(['requester_id', 'client_task_id'])
        .unique()
        .where(sql.ref('client_task_id'), 'is not', null)
        .execute();
      await db.schema.createIndex('tasks_assignee_updated_idx').on('tasks').columns(['assignee_id', 'updated_at', 'id']).execute();
      await db.schema.createIndex('tasks_requester_updated_idx').on('tasks').columns(['requester_id', 'updated_at', 'id']).execute();
      await db.schema
        .createIndex('tasks_due_idx')
        .on('tasks')
        .column('due_at')
        .where(sql.ref('terminal'), '=', 0)
        .execute();
      await db.schema
        .createTable('task_history')
        .addColumn('task_id', t.uuid, (c) => c.notNull())
        .addColumn('n', 'integer', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('at', t.timestamp, (c) => c.notNull())
        .addColumn('by_id', t.uuid)
        .addColumn('message_id', t.uuid)
        .addPrimaryKeyConstraint('task_history_pk', ['task_id', 'n'])
        .execute();
      await db.schema.alterTable('messages').addColumn('task', t.json).execute();
    },
  };
}
