import type { TaskState } from '@agent-messaging/protocol';
import { Waiters } from '../waiters/waiters.js';

/**
 * Held task requests (`GET /api/v1/tasks/:id?wait=S`, `GET /api/v1/tasks?wait=S`, MCP's waits),
 * woken when a task is created or moved, here or on another node: the event bridge
 * (cluster/event-bridge.ts) calls `wake` for both. The shared registry (core/waiters/waiters.ts),
 * keyed by the task's id, by its two agents and by its queue.
 */
export interface TaskChange {
  id: string;
  requesterId: string;
  assigneeId: string | null;
  state: TaskState;
  /** A queued task's queue (absent from nodes that predate queues: treated as none). */
  queueId?: string | null;
}

export interface TaskWaker {
  wake(change: TaskChange): void;
}

export const taskKey = (taskId: string): string => `task:${taskId}`;
export const agentKey = (agentId: string): string => `agent:${agentId}`;
export const queueKey = (queueId: string): string => `queue:${queueId}`;

export class TaskWaiters extends Waiters<TaskChange> implements TaskWaker {
  wake(change: TaskChange): void {
    const keys = [taskKey(change.id), agentKey(change.requesterId)];
    if (change.assigneeId !== null) keys.push(agentKey(change.assigneeId));
    if (change.queueId !== undefined && change.queueId !== null) keys.push(queueKey(change.queueId));
    this.wakeKeys(keys, change);
  }
}
