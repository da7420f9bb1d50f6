import { Role, TaskState as A2aState, type Artifact, type Message as A2aMessage, type Part, type Task as A2aTask } from '@a2a-js/sdk';
import type { TaskState } from '@agent-messaging/protocol';
import type { Message } from '../core/messages/message.js';
import type { Task } from '../core/tasks/task.js';

/**
 * The service's task states are the Agent2Agent protocol's, one for one (docs/a2a.md, Tasks); the
 * SDK numbers them.
 */
const TO_A2A: Record<TaskState, A2aState> = {
  submitted: A2aState.TASK_STATE_SUBMITTED,
  working: A2aState.TASK_STATE_WORKING,
  'input-required': A2aState.TASK_STATE_INPUT_REQUIRED,
  completed: A2aState.TASK_STATE_COMPLETED,
  failed: A2aState.TASK_STATE_FAILED,
  canceled: A2aState.TASK_STATE_CANCELED,
  rejected: A2aState.TASK_STATE_REJECTED,
};

export const toA2aState = (state: TaskState): A2aState => TO_A2A[state];

/** The state of the service's for an A2A filter; undefined for "unspecified" (every state). */
export function fromA2aState(state: A2aState): TaskState | undefined {
  for (const [ours, theirs] of Object.entries(TO_A2A) as [TaskState, A2aState][]) if (theirs === state) return ours;
  return undefined;
}

const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const dataPart = (data: unknown): Part => ({ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' });

/** Fields a message may carry once structured data and files are stored (read when present). */
interface MessageExtras {
  data?: Record<string, unknown> | null;
  attachments?: readonly { id: string; name: string; contentType: string }[];
}

/**
 * A message of the task's room (the one a move posted) as an A2A message: its text, its `data` as a
 * data part, its attachments as file parts naming their download URL. The requester speaks as
 * `user`, anyone else as `agent`.
 */
export function toA2aMessage(message: Message & MessageExtras, task: Task, baseUrl: string): A2aMessage {
  const parts: Part[] = [textPart(message.body)];
  if (message.data !== undefined && message.data !== null) parts.push(dataPart(message.data));
  for (const file of message.attachments ?? []) {
    parts.push({ content: { $case: 'url', value: `${baseUrl}/api/v1/files/${file.id}` }, metadata: undefined, filename: file.name, mediaType: file.contentType });
  }
  return {
    messageId: message.id,
    contextId: task.roomId,
    taskId: task.id,
    role: message.senderId === task.requesterId ? Role.ROLE_USER : Role.ROLE_AGENT,
    parts,
    metadata: { senderId: message.senderId, createdAt: message.createdAt },
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A task's `result`, when it has one, as its one artifact (a data part). */
function resultArtifacts(task: Task): Artifact[] {
  if (task.result === null) return [];
  return [{ artifactId: `${task.id}-result`, name: 'result', description: 'The task\'s result', parts: [dataPart(task.result)], metadata: undefined, extensions: [] }];
}

/**
 * A task of the service as an A2A task: the same id, its room as `contextId`, its state and, when
 * known, the message of its last move in `status`, its `result` as an artifact, and the service's own
 * fields (kind, title, the two agents, dueAt) in `metadata`.
 */
export function toA2aTask(task: Task, statusMessage: A2aMessage | undefined): A2aTask {
  return {
    id: task.id,
    contextId: task.roomId,
    status: { state: toA2aState(task.state), message: statusMessage, timestamp: task.updatedAt },
    artifacts: resultArtifacts(task),
    history: statusMessage === undefined ? [] : [statusMessage],
    metadata: { kind: task.kind, title: task.title, requesterId: task.requesterId, assigneeId: task.assigneeId, dueAt: task.dueAt, createdAt: task.createdAt },
  };
}
