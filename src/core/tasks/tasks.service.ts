import type { CompiledQuery, Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import {
  CreateTaskInput, MoveTaskInput, TASK_LIST_LIMITS, TASK_RESULT_MAX_BYTES, TASK_STATES, TASK_WAIT_MAX_SECONDS,
  type TaskState,
} from '@agent-messaging/protocol';
import { agentsNotFound, AppError, forbidden, notFound, validationError } from '../../errors.js';
import type { WaitSlots } from '../../limits/wait-slots.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { pauseStatement } from '../../store/test-pause.js';
import { nowIso } from '../../store/values.js';
import { findAgentById } from '../agents/agents.store.js';
import { auditStatement } from '../audit/audit.store.js';
import { requireRoom, type Authz } from '../authz/authz.js';
import type { EventPublisher } from '../events.js';
import { isDirectRoom } from '../messages/attention.js';
import type { MessagesService } from '../messages/messages.service.js';
import { parsePageLimit } from '../paging.js';
import { longPoll } from '../waiters/waiters.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { compile, isUuid, parseId, parseTimestamp, requireObject } from '../validation.js';
import { agentKey, taskKey, type TaskChange, type TaskWaiters } from './task-waiters.js';
import type { MessageTask } from '../messages/message.js';
import { allowedMove, isTerminal, type Task, type TaskSide } from './task.js';
import { findByClientTaskId, findTask, insertHistoryStatement, insertTaskStatement, listExpired, listTasks, moveTaskStatement, type StoredTask } from './tasks.store.js';

export interface CreateTaskResult {
  task: Task;
  /** False when a clientTaskId repeat returned the original task. */
  created: boolean;
}

export interface TaskListPage {
  tasks: Task[];
  nextCursor: string | null;
  hasMore: boolean;
}

export interface GetTaskQuery {
  wait?: unknown;
  changedAfter?: unknown;
}

/** A narrower list than the query's parameters allow, for callers inside the service (A2A: one target agent, one context). */
export interface TaskListNarrowing {
  counterpartId?: string;
  roomId?: string;
}

export interface ListTasksQuery {
  as?: unknown;
  state?: unknown;
  cursor?: unknown;
  limit?: unknown;
  wait?: unknown;
}

/** Tasks and approvals (docs/tasks.md): every transport calls these. */
export interface TasksService {
  create(principal: Principal | null, input: unknown): Promise<CreateTaskResult>;
  move(principal: Principal | null, taskId: unknown, input: unknown): Promise<Task>;
  /**
   * `signal`: the client went away; a held request then stops waiting. `slotHeld`: the caller holds
   * one of the agent's wait slots for a longer request made of such reads (an A2A stream), so this
   * read takes none of its own.
   */
  get(principal: Principal | null, taskId: unknown, query: GetTaskQuery, signal?: AbortSignal, slotHeld?: boolean): Promise<Task>;
  list(principal: Principal | null, query: ListTasksQuery, signal?: AbortSignal, narrowing?: TaskListNarrowing): Promise<TaskListPage>;
  /** Moves every task past its `dueAt` to failed (the periodic sweep; the conditional move makes it once across nodes). */
  expire(): Promise<number>;
  /** Runs `expire` every EXPIRY_INTERVAL_MS (one sweep at a time on this node) until `stopExpiry`. */
  startExpiry(onError: (err: unknown) => void): void;
  stopExpiry(): Promise<void>;
}

const createInput = compile(CreateTaskInput);
const moveInput = compile(MoveTaskInput);

/** How many expired tasks one sweep moves at most (the next sweep takes the rest). */
const EXPIRY_BATCH = 100;
/** A task past its `dueAt` fails within this (and the sweep's own time): docs/tasks.md promises 5 s. */
const EXPIRY_INTERVAL_MS = 1000;

const isState = (value: unknown): value is TaskState => typeof value === 'string' && (TASK_STATES as readonly string[]).includes(value);

/** Seconds 0..30, fractions allowed, from a query string or a number; `field` names it in the 400. */
export function parseTaskWait(raw: unknown, field = 'wait'): number {
  if (raw === undefined || raw === null || raw === '') return 0;
  const value = typeof raw === 'string' && /^\d{1,2}(\.\d{1,3})?$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > TASK_WAIT_MAX_SECONDS) {
    throw validationError({ [field]: `must be a number of seconds from 0 to ${TASK_WAIT_MAX_SECONDS}` });
  }
  return value;
}

function resultProblem(result: Record<string, unknown> | null | undefined): string | null {
  if (result === undefined || result === null) return null;
  return Buffer.byteLength(JSON.stringify(result)) > TASK_RESULT_MAX_BYTES ? `must be at most ${TASK_RESULT_MAX_BYTES} bytes as JSON` : null;
}

/** An opaque cursor: the last task's `updatedAt` and id. */
const encodeCursor = (task: Task): string => Buffer.from(`${task.updatedAt}|${task.id}`).toString('base64url');
function decodeCursor(raw: unknown): { updatedAt: string; id: string } | null {
  if (raw === undefined || raw === null || raw === '') return null;
  const bad = validationError({ cursor: 'must be the nextCursor of a previous page' });
  if (typeof raw !== 'string' || raw.length > 200) throw bad;
  const [updatedAt, id, ...rest] = Buffer.from(raw, 'base64url').toString().split('|');
  if (rest.length > 0 || updatedAt === undefined || id === undefined || !isUuid(id) || parseTimestamp(updatedAt) === null) throw bad;
  return { updatedAt: new Date(updatedAt).toISOString(), id };
}

function parseAs(raw: unknown): TaskSide | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (raw === 'assignee' || raw === 'requester') return raw;
  throw validationError({ as: 'must be assignee or requester' });
}

function parseStates(raw: unknown): TaskState[] | null {
  if (raw === undefined || raw === null || raw === '') return null;
  const states = typeof raw === 'string' ? raw.split(',').map((s) => s.trim()) : [];
  if (states.length === 0 || !states.every(isState)) throw validationError({ state: `must be a comma-separated list of ${TASK_STATES.join(', ')}` });
  return [...new Set(states)];
}

/** Strictly after `previous`, so that `changedAfter` sees every move even within one millisecond. */
function nextUpdatedAt(previous: string): string {
  const now = Date.now();
  const after = new Date(previous).getTime() + 1;
  return new Date(Math.max(now, after)).toISOString();
}

/** A task message's structured data and files (docs/tasks.md), as a send takes them. */
type MessageExtras = { data?: unknown; attachments?: unknown };
const extrasOf = (given: MessageExtras | undefined): MessageExtras => ({
  ...(given?.data === undefined ? {} : { data: given.data }),
  ...(given?.attachments === undefined ? {} : { attachments: given.attachments }),
});

const messageTask = (task: Task): MessageTask => ({ id: task.id, kind: task.kind, title: task.title, state: task.state });

export function createTasksService(deps: {
  db: Kysely<DB>; authz: Authz; rooms: RoomsService; messages: MessagesService; events: EventPublisher; waiters: TaskWaiters; waitSlots: WaitSlots;
  /**
   * TEST ONLY, set by AMS_TEST_PAUSE_TASK_MOVE alone (docs/tasks.md): every move's transaction waits
   * for it between its message's writes and the move's own (the crash test kills the process there).
   */
  pauseMove?: () => Promise<void>;
}): TasksService {
  const { db, authz, rooms, messages, events, waiters, waitSlots, pauseMove } = deps;

  /**
   * The message a creation or a move posts, in the task's room, by `senderId` (docs/tasks.md), and
   * the task's `writes` in the same commit: both are stored or neither ("A move is one commit").
   */
  const post = async (task: Task, senderId: string, messageId: string, body: string, extras: MessageExtras, writes: CompiledQuery[]): Promise<void> => {
    // The task's own scope decided; the message goes the send path, with the sender's membership checked there.
    // Its data and attachments were checked (checkExtras) before, so that their errors name the task's field.
    const sender: Principal = { agentId: senderId, role: 'agent' };
    await messages.sendForTask(sender, task.roomId, { body, ...extras }, {
      messageId,
      task: messageTask(task),
      ...(senderId === task.requesterId ? { attentionOf: task.assigneeId } : {}),
      statements: writes,
      parties: [task.requesterId, task.assigneeId],
    });
  };

  const published = async (task: Task): Promise<void> => {
    await events.publish({ type: 'task.updated', task });
  };

  /** The task and the caller's side; 404 to an agent who is neither side, 403 to such an admin. */
  const load = async (actor: Principal, rawId: unknown): Promise<{ stored: StoredTask; side: TaskSide | null }> => {
    const id = parseId(rawId, 'taskId');
    const stored = await findTask(db, id);
    if (!stored) throw notFound('Task');
    const { task } = stored;
    const side: TaskSide | null = task.requesterId === actor.agentId ? 'requester' : task.assigneeId === actor.agentId ? 'assignee' : null;
    if (side === null && actor.role !== 'admin') throw notFound('Task');
    // Reads and moves alike: a token limited to rooms reaches the tasks of those rooms only.
    requireRoom(actor, task.roomId);
    return { stored, side };
  };

  /**
   * One move, one commit (docs/tasks.md): the conditional UPDATE (state and version as read), its
   * history entry naming its message, its audit record and the message itself, in the message's
   * transaction; then its events. Null: another move changed the task first (its history entry took
   * this one's number: moveTaskStatement), and neither this move nor its message was written.
   */
  const applyMove = async (stored: StoredTask, by: string | null, senderId: string, state: TaskState, body: string | undefined, result: Record<string, unknown> | null | undefined, extras: MessageExtras = {}): Promise<Task | null> => {
    const before = stored.task;
    const messageId = uuidv7();
    const updatedAt = nextUpdatedAt(before.updatedAt);
    const task: Task = {
      ...before,
      state,
      result: result === undefined ? before.result : result,
      updatedAt,
      history: [...before.history, { state, at: updatedAt, by, messageId }],
    };
    const writes = [
      moveTaskStatement(db, before.id, { state: before.state, version: stored.version }, { state, terminal: isTerminal(state), result, updatedAt }),
      insertHistoryStatement(db, before.id, stored.version + 1, { state, at: updatedAt, by, messageId }),
      auditStatement(db, { event: 'task-updated', actorId: by, subjectId: before.id, detail: { from: before.state, to: state } }),
    ];
    // TEST ONLY (AMS_TEST_PAUSE_TASK_MOVE): the transaction stops here, its message written, the move not yet.
    if (pauseMove !== undefined) writes.unshift(pauseStatement(pauseMove));
    try {
      await post(task, senderId, messageId, body ?? `Task "${task.title}" is now ${state}`, extras, writes);
    } catch (err) {
      if (isUniqueViolation(err)) return null;
      throw err;
    }
    await published(task);
    return task;
  };

  const refuse = (state: TaskState): AppError => new AppError('CONFLICT', `The task is ${state}: this move is not allowed`, { state });

  /** Holds until the predicate's change is woken (or the wait ends), with one of the agent's wait slots. */
  // The one long-poll loop (core/waiters/waiters.ts), keyed by the task's or the agent's changes.
  const held = async <T>(agentId: string, seconds: number, keys: string[], matches: (c: TaskChange) => boolean, read: () => Promise<{ value: T; done: boolean }>, signal?: AbortSignal, slotHeld = false): Promise<T> => {
    const end = await longPoll({
      agentId, deadline: Date.now() + seconds * 1000, slots: waitSlots, registry: waiters, signal, slotHeld,
      register: (left) => waiters.wait(keys, matches, left, signal), read, found: (r) => r.done,
    });
    return end.kind === 'read' ? end.read.value : (await read()).value;
  };

  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> = Promise.resolve();

  const service: TasksService = {
    startExpiry(onError) {
      if (sweepTimer !== undefined) return;
      let busy = false;
      sweepTimer = setInterval(() => {
        if (busy) return;
        busy = true;
        sweeping = service.expire().catch(onError).finally(() => {
          busy = false;
        });
      }, EXPIRY_INTERVAL_MS);
      sweepTimer.unref();
    },

    async stopExpiry() {
      clearInterval(sweepTimer);
      sweepTimer = undefined;
      await sweeping;
    },

    async create(principal, input) {
      const actor = authz.requireAgent(principal, 'tasks:write');
      const fields = createInput.parse(requireObject(input));
      const assigneeId = fields.assignee.toLowerCase();
      if (!isUuid(assigneeId)) throw validationError({ assignee: 'must be an agent id (UUID)' });
      if (assigneeId === actor.agentId) throw validationError({ assignee: 'must not be the caller' });
      let dueAt: string | null = null;
      if (fields.dueAt !== undefined) {
        const due = parseTimestamp(fields.dueAt);
        if (due === null || due.getTime() <= Date.now()) throw validationError({ dueAt: 'must be a timestamp in the future' });
        dueAt = due.toISOString();
      }
      const clientTaskId = fields.clientTaskId ?? null;
      if (clientTaskId !== null) {
        const earlier = await findByClientTaskId(db, actor.agentId, clientTaskId);
        if (earlier) return { task: earlier.task, created: false };
      }
      await messages.checkExtras(actor.agentId, extrasOf(fields.input), 'input.');
      const assignee = await findAgentById(db, assigneeId);
      if (!assignee) throw agentsNotFound([assigneeId]);
      if (assignee.disabledAt !== null) throw forbidden('Agent is disabled');

      let roomId: string;
      if (fields.room !== undefined) {
        roomId = fields.room.toLowerCase();
        const room = await rooms.get(roomId);
        if (isDirectRoom(room)) throw validationError({ room: 'must be a group room (without room, the task lives in the direct room of the two)' });
        if ((await rooms.nonMembers(roomId, [actor.agentId, assigneeId])).length > 0) throw validationError({ room: 'both the requester and the assignee must be members of the room' });
      } else {
        roomId = (await rooms.openDirect({ agentId: actor.agentId, role: actor.role }, { agentId: assigneeId })).room.id;
      }
      requireRoom(actor, roomId);

      const now = nowIso();
      const messageId = uuidv7();
      const task: Task = {
        id: uuidv7(), kind: fields.kind ?? 'task', title: fields.title, requesterId: actor.agentId, assigneeId, roomId,
        state: 'submitted', result: null, dueAt, createdAt: now, updatedAt: now,
        history: [{ state: 'submitted', at: now, by: actor.agentId, messageId }],
      };
      try {
        // The task, its first history entry and its audit record in its message's commit.
        await post(task, actor.agentId, messageId, fields.input?.body ?? task.title, extrasOf(fields.input), [
          insertTaskStatement(db, task, clientTaskId),
          insertHistoryStatement(db, task.id, 0, task.history[0]!),
          auditStatement(db, { event: 'task-created', actorId: actor.agentId, subjectId: task.id, detail: { kind: task.kind, assigneeId, roomId } }),
        ]);
      } catch (err) {
        // Two concurrent creates with one clientTaskId: the loser answers the winner's task.
        if (clientTaskId !== null && isUniqueViolation(err)) {
          const original = await findByClientTaskId(db, actor.agentId, clientTaskId);
          if (original) return { task: original.task, created: false };
        }
        throw err;
      }
      await published(task);
      return { task, created: true };
    },

    async move(principal, rawId, input) {
      const actor = authz.requireAgent(principal, 'tasks:write');
      const fields = moveInput.parse(requireObject(input));
      if (!isState(fields.state)) throw validationError({ state: `must be one of ${TASK_STATES.join(', ')}` });
      const state = fields.state;
      const problem = resultProblem(fields.result);
      if (problem !== null) throw validationError({ result: problem });
      const { stored, side } = await load(actor, rawId);
      const task = stored.task;
      if (side === null) throw forbidden('Only the requester or the assignee may move a task');
      if (isTerminal(task.state) || !allowedMove(side, task.state, state)) throw refuse(task.state);
      // The result is the assignee's answer: a requester's move (a cancel, an answer) never sets it.
      if (side === 'requester' && fields.result !== undefined) throw validationError({ result: 'only the assignee\'s moves carry a result' });
      const body = fields.message?.body;
      if (side === 'requester' && state === 'working' && body === undefined) {
        throw validationError({ message: 'is required: the answer to the assignee\'s question (message.body)' });
      }
      if (task.kind === 'approval' && state === 'completed') {
        const decision = fields.result?.decision;
        if (decision !== 'approved' && decision !== 'denied') throw validationError({ 'result.decision': 'must be "approved" or "denied" to complete an approval' });
      }
      const extras = extrasOf(fields.message);
      await messages.checkExtras(actor.agentId, extras, 'message.');
      const moved = await applyMove(stored, actor.agentId, actor.agentId, state, body, fields.result, extras);
      if (moved) return moved;
      // Another move won the race: this one is refused against the state it left.
      const now = await findTask(db, task.id);
      throw refuse(now?.task.state ?? task.state);
    },

    async get(principal, rawId, query, signal, slotHeld = false) {
      const actor = authz.requireAgent(principal, 'tasks:read');
      const seconds = parseTaskWait(query.wait);
      let changedAfter = Date.now();
      if (query.changedAfter !== undefined && query.changedAfter !== null && query.changedAfter !== '') {
        const at = typeof query.changedAfter === 'string' ? parseTimestamp(query.changedAfter) : null;
        if (at === null) throw validationError({ changedAfter: 'must be an ISO 8601 timestamp' });
        changedAfter = at.getTime();
      }
      const { stored } = await load(actor, rawId);
      const id = stored.task.id;
      const settled = (task: Task): boolean => isTerminal(task.state) || new Date(task.updatedAt).getTime() > changedAfter;
      if (seconds === 0 || settled(stored.task)) return stored.task;
      return held(actor.agentId, seconds, [taskKey(id)], (c) => c.id === id, async () => {
        const now = await findTask(db, id);
        if (!now) throw notFound('Task');
        return { value: now.task, done: settled(now.task) };
      }, signal, slotHeld);
    },

    async list(principal, query, signal, narrowing = {}) {
      const actor = authz.requireAgent(principal, 'tasks:read');
      const as = parseAs(query.as);
      const states = parseStates(query.state);
      const after = decodeCursor(query.cursor);
      const limit = parsePageLimit(query.limit, TASK_LIST_LIMITS);
      const seconds = parseTaskWait(query.wait);
      const read = async (): Promise<{ value: TaskListPage; done: boolean }> => {
        // A token limited to rooms lists the tasks of those rooms only.
        const roomIds = actor.scope?.rooms;
        if (roomIds !== undefined && roomIds.length === 0) return { value: { tasks: [], hasMore: false, nextCursor: null }, done: false };
        const { tasks, hasMore } = await listTasks(db, { agentId: actor.agentId, as, states, after, limit, ...narrowing, ...(roomIds === undefined ? {} : { roomIds }) });
        const last = tasks[tasks.length - 1];
        return { value: { tasks, hasMore, nextCursor: hasMore && last ? encodeCursor(last) : null }, done: tasks.length > 0 };
      };
      if (seconds === 0) return (await read()).value;
      const matches = (c: TaskChange): boolean =>
        (as === null ? c.assigneeId === actor.agentId || c.requesterId === actor.agentId : (as === 'assignee' ? c.assigneeId : c.requesterId) === actor.agentId)
        && (states === null || states.includes(c.state))
        && (narrowing.counterpartId === undefined || c.assigneeId === narrowing.counterpartId || c.requesterId === narrowing.counterpartId);
      return held(actor.agentId, seconds, [agentKey(actor.agentId)], matches, read, signal);
    },

    async expire() {
      const ids = await listExpired(db, nowIso(), EXPIRY_BATCH);
      let expired = 0;
      for (const id of ids) {
        const stored = await findTask(db, id);
        if (!stored || isTerminal(stored.task.state)) continue;
        // Posted as the requester, who set dueAt; the history entry has `by: null`.
        if (await applyMove(stored, null, stored.task.requesterId, 'failed', `Task "${stored.task.title}" expired`, { reason: 'expired' })) expired++;
      }
      return expired;
    },
  };
  return service;
}
