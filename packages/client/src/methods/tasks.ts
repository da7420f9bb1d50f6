import { REQUEST_TIMEOUT_MS } from '../http.js';
import { ClientBase, enc } from '../client-base.js';
import type { NewTask, Task, TaskPage, TaskState } from '../types.js';

// Tasks and approvals (docs/tasks.md, docs/client.md, Tasks); `taskUpdated` events come through `on`.

export abstract class TaskMethods extends ClientBase {
  /**
   * Hands a task (or an approval) to another agent: `assignee` its id or name, `room` (a group room
   * both are members of; absent: their direct room) its id or slug. A `clientTaskId` repeat answers the original.
   */
  async createTask(task: NewTask): Promise<Task> {
    const body = {
      ...task,
      ...(task.assignee === undefined ? {} : { assignee: await this.agentId(task.assignee) }),
      ...(task.queue === undefined ? {} : { queue: await this.roomId(task.queue) }),
      ...(task.room === undefined ? {} : { room: await this.roomId(task.room) }),
    };
    return this.http.request('POST', '/api/v1/tasks', { body });
  }

  /** Moves a task (the transition table: docs/tasks.md); `message.body` answers an input-required task. */
  moveTask(taskId: string, move: { state: TaskState; message?: { body?: string; data?: Record<string, unknown>; attachments?: string[] }; result?: Record<string, unknown> | null }): Promise<Task> {
    return this.http.request('POST', `/api/v1/tasks/${enc(taskId)}/state`, { body: move });
  }

  /** Completes an approval assigned to the agent with `decision`, and a comment as its message. */
  decide(taskId: string, decision: 'approved' | 'denied', comment?: string): Promise<Task> {
    return this.moveTask(taskId, { state: 'completed', result: { decision, ...(comment === undefined ? {} : { comment }) }, ...(comment === undefined ? {} : { message: { body: comment } }) });
  }

  /** A task; `wait` (0..30 s) holds until it changes after `changedAfter` (default now) or is finished. */
  task(taskId: string, options: { wait?: number; changedAfter?: string } = {}): Promise<Task> {
    const waitMs = (options.wait ?? 0) * 1000;
    return this.http.request('GET', `/api/v1/tasks/${enc(taskId)}`, { query: { wait: options.wait, changedAfter: options.changedAfter }, timeoutMs: REQUEST_TIMEOUT_MS + waitMs });
  }

  /** The agent's tasks (or, with `queue`, a queue's), newest change first; `wait` holds while nothing matches. */
  async tasks(options: { queue?: string; as?: 'assignee' | 'requester'; state?: TaskState[]; cursor?: string; limit?: number; wait?: number } = {}): Promise<TaskPage> {
    const waitMs = (options.wait ?? 0) * 1000;
    const queue = options.queue === undefined ? undefined : await this.roomId(options.queue);
    const query = { queue, as: options.as, state: options.state?.join(','), cursor: options.cursor, limit: options.limit, wait: options.wait };
    return this.http.request('GET', '/api/v1/tasks', { query, timeoutMs: REQUEST_TIMEOUT_MS + waitMs });
  }

  /**
   * Claims a queued task (docs/tasks.md, Queues): it becomes the agent's for `leaseSeconds` (10..3600,
   * default 300), renewed by its moves and `heartbeatTask`. A CONFLICT's `details.assigneeId` names who has it.
   */
  claimTask(taskId: string, options: { leaseSeconds?: number } = {}): Promise<Task> {
    return this.http.request('POST', `/api/v1/tasks/${enc(taskId)}/claim`, { body: options });
  }

  /** Claims the oldest unclaimed task of `queue` (a room id or slug); `wait` (0..30 s) holds until one comes. Null when none. */
  async claimNextTask(queue: string, options: { leaseSeconds?: number; wait?: number } = {}): Promise<Task | null> {
    const waitMs = (options.wait ?? 0) * 1000;
    const body = { queue: await this.roomId(queue), ...options };
    const task = await this.http.request<Task | undefined | null>('POST', '/api/v1/tasks/claim', { body, timeoutMs: REQUEST_TIMEOUT_MS + waitMs });
    return task ?? null;
  }

  /** Renews the agent's lease on a task it claimed (`leaseSeconds`: default the claim's). */
  heartbeatTask(taskId: string, options: { leaseSeconds?: number } = {}): Promise<Task> {
    return this.http.request('POST', `/api/v1/tasks/${enc(taskId)}/heartbeat`, { body: options });
  }
}
