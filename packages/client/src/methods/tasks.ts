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
      assignee: await this.agentId(task.assignee),
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

  /** The agent's tasks, newest change first; `wait` holds while nothing matches. */
  tasks(options: { as?: 'assignee' | 'requester'; state?: TaskState[]; cursor?: string; limit?: number; wait?: number } = {}): Promise<TaskPage> {
    const waitMs = (options.wait ?? 0) * 1000;
    const query = { as: options.as, state: options.state?.join(','), cursor: options.cursor, limit: options.limit, wait: options.wait };
    return this.http.request('GET', '/api/v1/tasks', { query, timeoutMs: REQUEST_TIMEOUT_MS + waitMs });
  }
}
