import type {
  AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest,
  GetTaskRequest, ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
  Message as A2aMessage, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task as A2aTask, TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  A2AError, ContentTypeNotSupportedError, ExtendedAgentCardNotConfiguredError, PushNotificationNotSupportedError, RequestMalformedError, TaskNotCancelableError,
  TaskNotFoundError, UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { ATTACHMENTS_MAX, TASK_TITLE_MAX, TASK_WAIT_MAX_SECONDS, isUuid } from '@agent-messaging/protocol';
import type { Agent } from '../core/agents/agents.store.js';
import type { FilesService } from '../core/files/files.service.js';
import type { MessagesService } from '../core/messages/messages.service.js';
import type { Principal } from '../core/principal.js';
import { isTerminal, type Task } from '../core/tasks/task.js';
import type { TasksService } from '../core/tasks/tasks.service.js';
import { AppError, toPublicError } from '../errors.js';
import type { WaitSlots } from '../limits/wait-slots.js';
import { fromA2aState, toA2aMessage, toA2aState, toA2aTask } from './mapping.js';

/**
 * The services an A2A request calls (docs/a2a.md): tasks, messages for what a move said, files for
 * file parts, and the agents' wait slots that a held request (a stream, a blocking send) takes.
 */
export interface A2aServices {
  tasks: Pick<TasksService, 'create' | 'move' | 'get' | 'list'>;
  messages: Pick<MessagesService, 'thread'>;
  files: Pick<FilesService, 'upload'>;
  limits: { waits: Pick<WaitSlots, 'acquire'> };
}

/** How long a blocking send waits for a terminal or `input-required` state (docs/a2a.md). */
export const BLOCKING_WAIT_MS = TASK_WAIT_MAX_SECONDS * 1000;

/** A stream ends with the task, or when it waits for the caller. */
const settles = (task: Task): boolean => isTerminal(task.state) || task.state === 'input-required';

/**
 * What the service refused, as the protocol's error its catalog entry names (errors.ts, the `a2a`
 * column): a bad field is invalid params naming it, an unknown task (or another caller's) is "task
 * not found", a move the task's state does not allow is "not cancelable" for a cancel and
 * "unsupported operation" otherwise. The rest goes on to toPublicA2aError.
 */
function toA2aError(err: unknown, conflict: 'cancel' | 'send'): unknown {
  if (!(err instanceof AppError)) return err;
  const details = err.details === undefined ? '' : `: ${Object.entries(err.details).map(([field, problem]) => `${field} ${problem}`).join('; ')}`;
  switch (err.a2aKind) {
    case 'invalid-params':
      return new RequestMalformedError({ message: `${err.message}${details}`, metadata: err.details });
    case 'task-not-found':
      return new TaskNotFoundError(err.message);
    case 'conflict':
      return conflict === 'cancel' ? new TaskNotCancelableError(`The task cannot be canceled${details}`) : new UnsupportedOperationError(`The task cannot take this message${details}`);
    case 'unsupported':
      return new UnsupportedOperationError(err.message);
    default:
      return err;
  }
}

/**
 * Anything that is not already the protocol's error, as an internal error: a refusal that is no
 * one's fault here (too many held waits; the database away, which reaches here as the driver's
 * error) carries the catalog's code and text, as MCP gives them, so a caller knows to retry (A2A
 * has no code of its own for them); anything else says nothing of the cause, which is logged (the
 * SDK would otherwise send the error's own message).
 */
export function toPublicA2aError(err: unknown, log: (err: unknown) => void): unknown {
  if (err instanceof A2AError) return err;
  const refusal = toPublicError(err);
  if (refusal.a2aKind === 'coded') return new Error(`${refusal.code}: ${refusal.message}`);
  if (refusal.a2aKind !== 'internal') return toA2aError(refusal, 'send');
  log(err);
  return new Error('Internal error');
}

async function mapped<T>(conflict: 'cancel' | 'send', run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw toA2aError(err, conflict);
  }
}

/** The body, `data` and file refusals of an A2A message's parts (docs/a2a.md, Messages). */
/** A file part's bytes, uploaded as the caller's file and attached to the task's message. */
interface FilePart { bytes: Uint8Array; name: string; contentType: string }

function readParts(message: A2aMessage): { body: string; data?: Record<string, unknown>; files: FilePart[] } {
  const texts: string[] = [];
  const files: FilePart[] = [];
  let data: Record<string, unknown> | undefined;
  for (const part of message.parts) {
    const content = part.content;
    if (content === undefined) throw new RequestMalformedError('Every part needs its content: text, data, raw or url');
    switch (content.$case) {
      case 'text':
        texts.push(content.value);
        break;
      case 'data': {
        const value: unknown = content.value;
        if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RequestMalformedError('A data part must hold a JSON object');
        if (data !== undefined) throw new RequestMalformedError('At most one data part');
        data = value as Record<string, unknown>;
        break;
      }
      case 'url':
        throw new ContentTypeNotSupportedError('A file part by URL is refused: the service fetches no URL on a caller\'s behalf; send its bytes');
      case 'raw':
        if (files.length === ATTACHMENTS_MAX) throw new RequestMalformedError(`At most ${ATTACHMENTS_MAX} file parts`);
        files.push({ bytes: content.value, name: part.filename === '' ? 'file' : part.filename, contentType: part.mediaType === '' ? 'application/octet-stream' : part.mediaType });
        break;
    }
  }
  if (texts.length === 0) throw new RequestMalformedError('The message needs at least one text part');
  return { body: texts.join('\n'), ...(data === undefined ? {} : { data }), files };
}

const titleOf = (body: string): string => {
  const firstLine = (body.split('\n', 1)[0] ?? '').trim();
  const chars = Array.from(firstLine === '' ? body.trim() : firstLine);
  return chars.slice(0, TASK_TITLE_MAX).join('') || 'Task';
};

/**
 * The SDK's request handler, over the service's tasks: one per request, for one caller (the
 * principal) and one target agent (the assignee). It keeps nothing: every answer is read from the
 * tasks service, and a stream follows a task by the service's held reads, which every node wakes
 * (docs/a2a.md).
 */
export class ServiceRequestHandler implements A2ARequestHandler {
  constructor(
    private readonly services: A2aServices,
    private readonly principal: Principal,
    private readonly target: Agent,
    private readonly card: AgentCard,
    private readonly baseUrl: string,
    /** Aborted when the client goes away: held reads and streams stop. */
    private readonly signal: AbortSignal,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }

  getAuthenticatedExtendedAgentCard(_params: GetExtendedAgentCardRequest): Promise<AgentCard> {
    return Promise.reject(new ExtendedAgentCardNotConfiguredError('This agent has no extended card'));
  }

  async sendMessage(params: SendMessageRequest): Promise<A2aTask> {
    const blocking = params.configuration?.returnImmediately !== true;
    // Taken before the task is made: a refused send leaves nothing behind.
    const release = blocking ? this.takeWaitSlot() : undefined;
    try {
      let task = await this.submit(params);
      if (blocking) {
        const deadline = Date.now() + BLOCKING_WAIT_MS;
        while (!settles(task) && Date.now() < deadline && !this.signal.aborted) {
          const seconds = Math.min(TASK_WAIT_MAX_SECONDS, Math.max(0, (deadline - Date.now()) / 1000));
          task = await mapped('send', () => this.services.tasks.get(this.principal, task.id, { wait: seconds, changedAfter: task.updatedAt }, this.signal, true));
        }
      }
      return await this.toTask(task);
    } finally {
      release?.();
    }
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const release = this.takeWaitSlot();
    try {
      const task = await this.submit(params);
      yield { payload: { $case: 'task', value: await this.toTask(task) } };
      yield* this.follow(task);
    } finally {
      release();
    }
  }

  async getTask(params: GetTaskRequest): Promise<A2aTask> {
    return this.toTask(await this.ownTask(params.id));
  }

  async cancelTask(params: CancelTaskRequest): Promise<A2aTask> {
    const task = await this.ownTask(params.id);
    if (isTerminal(task.state)) throw new TaskNotCancelableError(`The task is ${task.state}`);
    return this.toTask(await mapped('cancel', () => this.services.tasks.move(this.principal, task.id, { state: 'canceled' })));
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const state = fromA2aState(params.status);
    // A context is a room id: any other text names no context of this caller's.
    const roomId = params.contextId === '' ? undefined : params.contextId.toLowerCase();
    if (roomId !== undefined && !isUuid(roomId)) return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 };
    // The caller's tasks given to this agent, narrowed in the query, so that a page is full.
    const page = await mapped('send', () => this.services.tasks.list(this.principal, {
      as: 'requester',
      ...(state === undefined ? {} : { state }),
      ...(params.pageToken === '' ? {} : { cursor: params.pageToken }),
      ...(params.pageSize === undefined ? {} : { limit: params.pageSize }),
    }, this.signal, { counterpartId: this.target.id, ...(roomId === undefined ? {} : { roomId }) }));
    const tasks = await Promise.all(page.tasks.map((task) => this.toTask(task)));
    return { tasks, nextPageToken: page.nextCursor ?? '', pageSize: tasks.length, totalSize: tasks.length };
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const release = this.takeWaitSlot();
    try {
      const task = await this.ownTask(params.id);
      if (isTerminal(task.state)) throw new UnsupportedOperationError(`The task is ${task.state}: there is nothing to follow`);
      yield { payload: { $case: 'task', value: await this.toTask(task) } };
      yield* this.follow(task, false);
    } finally {
      release();
    }
  }

  createTaskPushNotificationConfig(_params: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError('Push notifications are not supported: follow a task with a stream'));
  }

  getTaskPushNotificationConfig(_params: GetTaskPushNotificationConfigRequest): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  listTaskPushNotificationConfigs(_params: ListTaskPushNotificationConfigsRequest): Promise<ListTaskPushNotificationConfigsResponse> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  deleteTaskPushNotificationConfig(_params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  /**
   * A message either creates a task (caller requester, target assignee, their direct room; the A2A
   * `messageId` its `clientTaskId`) or, naming a task of the caller, answers it: the requester's
   * `input-required` -> `working` move.
   */
  private async submit(params: SendMessageRequest): Promise<Task> {
    const message = params.message;
    if (message === undefined) throw new RequestMalformedError('params.message is required');
    const { files, ...parts } = readParts(message);
    // The file parts become the caller's uploads (the files service's rules: name, size), attached.
    const attachments: string[] = [];
    for (const file of files) {
      const uploaded = await mapped('send', () => this.services.files.upload(this.principal, { name: file.name, contentType: file.contentType, declaredLength: file.bytes.length }, [file.bytes]));
      attachments.push(uploaded.id);
    }
    const input = { ...parts, ...(attachments.length > 0 ? { attachments } : {}) };
    if (message.taskId !== '') {
      const task = await this.ownTask(message.taskId);
      return mapped('send', () => this.services.tasks.move(this.principal, task.id, { state: 'working', message: input }));
    }
    const { task } = await mapped('send', () => this.services.tasks.create(this.principal, {
      assignee: this.target.id,
      title: titleOf(input.body),
      input,
      ...(message.messageId === '' ? {} : { clientTaskId: message.messageId }),
    }));
    return task;
  }

  /**
   * One of the caller's wait slots (src/limits/wait-slots.ts), held by a stream or a blocking send
   * for as long as it lasts, as every held request holds one; beyond the cap it is refused before
   * anything is done (RATE_LIMITED, the JSON-RPC internal error with its text). The held reads it
   * makes take none of their own.
   */
  private takeWaitSlot(): () => void {
    return this.services.limits.waits.acquire(this.principal.agentId);
  }

  /** A task of this caller given to this agent; "task not found" for any other (docs/a2a.md). */
  private async ownTask(id: string): Promise<Task> {
    if (id === '') throw new RequestMalformedError('The task id is required');
    const task = await mapped('send', () => this.services.tasks.get(this.principal, id, {}, this.signal));
    if (task.requesterId !== this.principal.agentId || task.assigneeId !== this.target.id) throw new TaskNotFoundError('Task not found');
    return task;
  }

  /**
   * A status update for every move after the ones `task` has, until the task settles (terminal, or
   * waiting for the caller) or the client goes away. Each held read returns when the task changes on
   * any node; the history names every move, so none is skipped however fast they come.
   */
  /** A subscription (`stopAtInputRequired` false) stays open through input-required until the task ends. */
  private async *follow(start: Task, stopAtInputRequired = true): AsyncGenerator<StreamResponse, void, undefined> {
    let task = start;
    let seen = task.history.length;
    const done = (t: Task): boolean => isTerminal(t.state) || (stopAtInputRequired && t.state === 'input-required');
    while (!done(task) && !this.signal.aborted) {
      const current = task;
      task = await mapped('send', () => this.services.tasks.get(this.principal, current.id, { wait: TASK_WAIT_MAX_SECONDS, changedAfter: current.updatedAt }, this.signal, true));
      for (const entry of task.history.slice(seen)) {
        const message = await this.messageOf(task, entry.messageId);
        yield {
          payload: {
            $case: 'statusUpdate',
            value: { taskId: task.id, contextId: task.roomId, status: { state: toA2aState(entry.state), message, timestamp: entry.at }, metadata: { by: entry.by } },
          },
        };
      }
      seen = task.history.length;
    }
  }

  private async toTask(task: Task): Promise<A2aTask> {
    const last = task.history.at(-1);
    return toA2aTask(task, last === undefined ? undefined : await this.messageOf(task, last.messageId));
  }

  /** The message a move posted, as an A2A message; undefined when the caller cannot read it. */
  private async messageOf(task: Task, messageId: string | null): Promise<A2aMessage | undefined> {
    if (messageId === null) return undefined;
    // A move and its message are one commit (docs/tasks.md): a history entry's message exists.
    try {
      const { root } = await this.services.messages.thread(this.principal, task.roomId, messageId, { limit: 1 });
      return root.id === messageId ? toA2aMessage(root, task, this.baseUrl) : undefined;
    } catch (err) {
      // A token without messages:read, or a caller who no longer reads the room, still follows the task's states.
      if (err instanceof AppError && (err.code === 'FORBIDDEN' || err.code === 'NOT_FOUND')) return undefined;
      throw err;
    }
  }
}
