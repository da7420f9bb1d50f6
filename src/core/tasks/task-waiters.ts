import type { TaskState } from '@agent-messaging/protocol';
import { Waiters } from '../waiters/waiters.js';

/**
 * Held task requests (`GET /api/v1/tasks/:id?wait=S`, `GET /api/v1/tasks?wait=S`, MCP's waits),
 * woken when a task is created or moved, here or on another node: the event bridge
 * (cluster/event-bridge.ts) calls `wake` for both. The shared registry (core/waiters/waiters.ts),
 * keyed by the task's id and by its two agents.
 */
export interface TaskChange {
  id: string;
  requesterId: string;
  assigneeId: string;
  state: TaskState;
}

export interface TaskWaker {
  wake(change: TaskChange): void;
}

export const taskKey = (taskId: string): string => `task:${taskId}`;
export const agentKey = (agentId: string): string => `agent:${agentId}`;

export class TaskWaiters extends Waiters<TaskChange> implements TaskWaker {
  wake(change: TaskChange): void {
    this.wakeKeys([taskKey(change.id), agentKey(change.requesterId), agentKey(change.assigneeId)], change);
  }
}
