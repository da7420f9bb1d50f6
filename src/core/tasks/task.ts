import { TERMINAL_TASK_STATES, type TaskKind, type TaskState } from '@agent-messaging/protocol';

/** A task as the domain sees it, and as REST returns it (docs/tasks.md). */
export interface Task {
  id: string;
  kind: TaskKind;
  title: string;
  requesterId: string;
  /** Null while a queued task is unclaimed. */
  assigneeId: string | null;
  roomId: string;
  /** The queue (a room) a queued task was created in (docs/tasks.md, "Queues"); null otherwise. */
  queueId: string | null;
  state: TaskState;
  result: Record<string, unknown> | null;
  dueAt: string | null;
  /** When the claimer's lease runs out; null unless claimed and not terminal. */
  leaseExpiresAt: string | null;
  attempts: number;
  maxAttempts: number;
  /** Grows with every claim: a fencing number. */
  claim: number;
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
  /** `claimed`, `lease-expired`; absent for other moves. */
  reason?: TaskMoveReason;
}

export type TaskMoveReason = 'claimed' | 'lease-expired';

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
