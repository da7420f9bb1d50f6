import { sql, type CompiledQuery, type Selectable } from 'kysely';
import type { TaskKind, TaskState } from '@agent-messaging/protocol';
import type { Db, TaskHistoryTable, TasksTable } from '../../store/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../store/values.js';
import type { Task, TaskHistoryEntry, TaskMoveReason } from './task.js';

type TaskRow = Selectable<TasksTable>;

/** A task row and its version (the optimistic-concurrency counter a move compares). */
export interface StoredTask {
  task: Task;
  version: number;
  /** The claimer's lease length, which its moves renew (null when not claimed). */
  leaseSeconds: number | null;
}

const toEntry = (row: Selectable<TaskHistoryTable>): TaskHistoryEntry => ({
  state: row.state as TaskState,
  at: toIso(row.at),
  by: row.by_id,
  messageId: row.message_id,
  ...(row.reason === null ? {} : { reason: row.reason as TaskMoveReason }),
});

function toTask(row: TaskRow, history: TaskHistoryEntry[]): Task {
  const result = row.result === null ? null : fromJson(row.result);
  return {
    id: row.id,
    kind: row.kind as TaskKind,
    title: row.title,
    requesterId: row.requester_id,
    assigneeId: row.assignee_id,
    roomId: row.room_id,
    queueId: row.queue_id,
    state: row.state as TaskState,
    result: result === null ? null : (result as Record<string, unknown>),
    dueAt: toIsoOrNull(row.due_at),
    leaseExpiresAt: toIsoOrNull(row.lease_expires_at),
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    claim: Number(row.claim),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    history,
  };
}

async function withHistory(db: Db, rows: readonly TaskRow[]): Promise<StoredTask[]> {
  if (rows.length === 0) return [];
  const entries = await db.selectFrom('task_history').selectAll().where('task_id', 'in', rows.map((r) => r.id)).orderBy('task_id').orderBy('n').execute();
  const byTask = new Map<string, TaskHistoryEntry[]>();
  for (const entry of entries) {
    let list = byTask.get(entry.task_id);
    if (list === undefined) byTask.set(entry.task_id, (list = []));
    list.push(toEntry(entry));
  }
  return rows.map((row) => ({ task: toTask(row, byTask.get(row.id) ?? []), version: Number(row.version), leaseSeconds: row.lease_seconds === null ? null : Number(row.lease_seconds) }));
}

export async function findTask(db: Db, id: string): Promise<StoredTask | null> {
  const row = await db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? (await withHistory(db, [row]))[0]! : null;
}

export async function findByClientTaskId(db: Db, requesterId: string, clientTaskId: string): Promise<StoredTask | null> {
  const row = await db.selectFrom('tasks').selectAll().where('requester_id', '=', requesterId).where('client_task_id', '=', clientTaskId).executeTakeFirst();
  return row ? (await withHistory(db, [row]))[0]! : null;
}

export function insertTaskStatement(db: Db, task: Task, clientTaskId: string | null): CompiledQuery {
  return db.insertInto('tasks').values({
    id: task.id,
    kind: task.kind,
    title: task.title,
    requester_id: task.requesterId,
    assignee_id: task.assigneeId,
    room_id: task.roomId,
    state: task.state,
    terminal: 0,
    result: task.result === null ? null : JSON.stringify(task.result),
    due_at: task.dueAt,
    client_task_id: clientTaskId,
    version: 0,
    queue_id: task.queueId,
    max_attempts: task.maxAttempts,
    created_at: task.createdAt,
    updated_at: task.updatedAt,
  }).compile();
}

export function insertHistoryStatement(db: Db, taskId: string, n: number, entry: TaskHistoryEntry): CompiledQuery {
  return db.insertInto('task_history').values({ task_id: taskId, n, state: entry.state, at: entry.at, by_id: entry.by, message_id: entry.messageId, reason: entry.reason ?? null }).compile();
}

/**
 * A move, if the task is still in `from` at `version` (docs/tasks.md, races): the one conditional
 * UPDATE decides the winner. It goes with the move's history entry, numbered `version + 1`
 * (insertHistoryStatement), in one transaction, and nothing reads its row count: `version` grows by
 * one at every move and every move writes the entry of the version it makes, so a move that lost
 * (another move, on any node, or the expiry, changed the task first: the UPDATE changes nothing)
 * finds that number taken, and the primary key of task_history fails its whole transaction.
 */
export function moveTaskStatement(db: Db, id: string, expected: { state: TaskState; version: number; leaseRanOutBy?: string }, next: {
  state: TaskState; terminal: boolean; result: Record<string, unknown> | null | undefined; updatedAt: string; claim?: LeaseChange;
}): CompiledQuery {
  const lease = next.claim;
  let update = db.updateTable('tasks')
    .set({
      state: next.state,
      terminal: next.terminal ? 1 : 0,
      updated_at: next.updatedAt,
      version: expected.version + 1,
      ...(next.result === undefined ? {} : { result: next.result === null ? null : JSON.stringify(next.result) }),
      ...(lease === undefined ? {} : {
        assignee_id: lease.assigneeId, lease_expires_at: lease.leaseExpiresAt, lease_seconds: lease.leaseSeconds, attempts: lease.attempts, claim: lease.claim,
      }),
    })
    .where('id', '=', id)
    .where('state', '=', expected.state)
    .where('version', '=', expected.version);
  const by = expected.leaseRanOutBy;
  if (by !== undefined) update = update.where('lease_expires_at', '<=', by);
  return update.compile();
}

/** The claim columns a move sets (a claim, a renewal by the claimer's move, the lease running out). */
export interface LeaseChange {
  assigneeId: string | null;
  leaseExpiresAt: string | null;
  leaseSeconds: number | null;
  attempts: number;
  claim: number;
}

/**
 * Fails the transaction (a unique violation on the creation's history entry, number 0) unless the
 * task is at `version` now, i.e. unless this transaction's conditional UPDATE changed it. Only the
 * lease expiry needs it: its UPDATE also asks that the lease has run out, and a heartbeat renews a
 * lease without a new version, so without this guard a lost expiry would still write its entry.
 */
export function requireVersionStatement(db: Db, id: string, version: number): CompiledQuery {
  return db.insertInto('task_history')
    .columns(['task_id', 'n', 'state', 'at'])
    .expression(db.selectFrom('tasks').select(['id', sql<number>`0`.as('n'), 'state', 'updated_at']).where('id', '=', id).where('version', '<>', version))
    .compile();
}

/** A heartbeat: renews the lease of the claimer still holding claim `claim`; false when it holds it no more. */
export async function renewLease(db: Db, id: string, holder: { assigneeId: string; claim: number }, lease: { expiresAt: string; seconds: number }): Promise<boolean> {
  // Not a move: no new version (a move racing it still wins on its own), no new updatedAt.
  const result = await db.updateTable('tasks')
    .set({ lease_expires_at: lease.expiresAt, lease_seconds: lease.seconds })
    .where('id', '=', id).where('assignee_id', '=', holder.assigneeId).where('claim', '=', holder.claim).where('terminal', '=', 0)
    .where('queue_id', 'is not', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The oldest unclaimed `submitted` tasks of a queue (by creation), up to `limit`. */
export async function listClaimable(db: Db, queueId: string, limit: number): Promise<StoredTask[]> {
  const rows = await db.selectFrom('tasks').selectAll().where('queue_id', '=', queueId).where('assignee_id', 'is', null).where('state', '=', 'submitted')
    .orderBy('created_at').orderBy('id').limit(limit).execute();
  return withHistory(db, rows);
}

/** Ids of claimed tasks, not terminal, whose lease ran out by `now` (the lease sweep), oldest first. */
export async function listLeaseExpired(db: Db, now: string, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('tasks').select('id').where('lease_expires_at', 'is not', null).where('lease_expires_at', '<=', now).where('terminal', '=', 0)
    .orderBy('lease_expires_at').limit(limit).execute();
  return rows.map((r) => r.id);
}

/** The ids of tasks not terminal whose `dueAt` passed (the expiry sweep), oldest due first. */
export async function listExpired(db: Db, now: string, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('tasks').select('id').where('terminal', '=', 0).where('due_at', 'is not', null).where('due_at', '<=', now).orderBy('due_at').limit(limit).execute();
  return rows.map((r) => r.id);
}

export interface TaskListQuery {
  agentId: string;
  as: 'assignee' | 'requester' | null;
  states: readonly TaskState[] | null;
  after: { updatedAt: string; id: string } | null;
  limit: number;
  /** Only the tasks between the agent and this one (A2A: one target agent). */
  counterpartId?: string;
  /** Only the tasks in this room (A2A: a context). */
  roomId?: string;
  /** Only the tasks in these rooms (a token limited to rooms; never empty). */
  roomIds?: readonly string[];
  /** A queue's tasks, whoever their sides (the agent filter is not applied). */
  queueId?: string;
}

/** Newest `updatedAt` first (then id), after the cursor; one extra row tells whether more follow. */
export async function listTasks(db: Db, q: TaskListQuery): Promise<{ tasks: Task[]; hasMore: boolean }> {
  let query = db.selectFrom('tasks').selectAll();
  if (q.queueId !== undefined) query = query.where('queue_id', '=', q.queueId);
  if (q.as === 'assignee') query = query.where('assignee_id', '=', q.agentId);
  else if (q.as === 'requester') query = query.where('requester_id', '=', q.agentId);
  else if (q.queueId === undefined) query = query.where((eb) => eb.or([eb('assignee_id', '=', q.agentId), eb('requester_id', '=', q.agentId)]));
  if (q.states !== null) query = query.where('state', 'in', [...q.states]);
  const other = q.counterpartId;
  // The agent is one side (above) and cannot be both: the other side is `other`.
  if (other !== undefined) {
    if (q.as === 'assignee') query = query.where('requester_id', '=', other);
    else if (q.as === 'requester') query = query.where('assignee_id', '=', other);
    else query = query.where((eb) => eb.or([eb('assignee_id', '=', other), eb('requester_id', '=', other)]));
  }
  if (q.roomId !== undefined) query = query.where('room_id', '=', q.roomId);
  if (q.roomIds !== undefined) query = query.where('room_id', 'in', [...q.roomIds]);
  const after = q.after;
  if (after !== null) {
    query = query.where((eb) => eb.or([eb('updated_at', '<', after.updatedAt), eb.and([eb('updated_at', '=', after.updatedAt), eb('id', '<', after.id)])]));
  }
  const rows = await query.orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(q.limit + 1).execute();
  const page = await withHistory(db, rows.slice(0, q.limit));
  return { tasks: page.map((s) => s.task), hasMore: rows.length > q.limit };
}
