import { TERMINAL_TASK_STATES, type TaskKind, type TaskState } from '@agent-messaging/protocol';

/** A task as the domain sees it, and as REST returns it (docs/tasks.md). */
export interface Task {
  id: string;
  kind: TaskKind;
  title: string;
  requesterId: string;
  assigneeId: string;
  roomId: string;
  state: TaskState;
  result: Record<string, unknown> | null;
  dueAt: string | null;
  createdAt: string;
  updatedAt: string;
  history: TaskHistoryEntry[];
}

export interface TaskHistoryEntry {
  state: TaskState;
  at: string;
  /** Null for the expiry. */
  by: string | null;
  messageId: string | null;
}

export type TaskSide = 'requester' | 'assignee';

/** The moves each side may make (docs/tasks.md, the transition table); anything else is 409. */
export const TRANSITIONS: Record<TaskSide, Partial<Record<TaskState, readonly TaskState[]>>> = {
  assignee: {
    submitted: ['working', 'rejected', 'completed', 'failed'],
    working: ['input-required', 'completed', 'failed'],
    'input-required': ['working', 'completed', 'failed'],
  },
  requester: {
    submitted: ['canceled'],
    working: ['canceled'],
    'input-required': ['working', 'canceled'],
  },
};

export const isTerminal = (state: TaskState): boolean => TERMINAL_TASK_STATES.includes(state);

export const allowedMove = (side: TaskSide, from: TaskState, to: TaskState): boolean => (TRANSITIONS[side][from] ?? []).includes(to);
