import type { TaskState } from '@agent-messaging/protocol';

/**
 * Held task requests (`GET /api/v1/tasks/:id?wait=S`, `GET /api/v1/tasks?wait=S`, MCP's waits),
 * woken when a task is created or moved, here or on another node: the event bridge
 * (cluster/event-bridge.ts) calls `wake` for both. Like the inbox's waiters (inbox-waiters.ts): a
 * few small objects in memory per waiter, keyed by the task's id and by its two agents.
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

export type TaskWaitOutcome = 'woken' | 'timeout' | 'closed' | 'aborted';

interface Waiter {
  keys: readonly string[];
  matches(change: TaskChange): boolean;
  settle(outcome: TaskWaitOutcome): void;
}

export const taskKey = (taskId: string): string => `task:${taskId}`;
export const agentKey = (agentId: string): string => `agent:${agentId}`;

export class TaskWaiters implements TaskWaker {
  private readonly byKey = new Map<string, Set<Waiter>>();
  private readonly all = new Set<Waiter>();
  private closed = false;

  get size(): number {
    return this.all.size;
  }

  /** Register before reading: a change committed between the read and the wait still wakes it. */
  wait(keys: readonly string[], matches: (change: TaskChange) => boolean, timeoutMs: number, signal?: AbortSignal): { outcome: Promise<TaskWaitOutcome>; cancel(): void } {
    let settle!: (outcome: TaskWaitOutcome) => void;
    const outcome = new Promise<TaskWaitOutcome>((resolve) => {
      settle = resolve;
    });
    if (this.closed || signal?.aborted) {
      settle(this.closed ? 'closed' : 'aborted');
      return { outcome, cancel: () => undefined };
    }
    let done = false;
    const onAbort = (): void => finish('aborted');
    const waiter: Waiter = { keys, matches, settle: (o) => finish(o) };
    const timer = setTimeout(() => finish('timeout'), Math.max(0, timeoutMs));
    const finish = (o: TaskWaitOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      this.all.delete(waiter);
      for (const key of keys) {
        const set = this.byKey.get(key);
        set?.delete(waiter);
        if (set?.size === 0) this.byKey.delete(key);
      }
      settle(o);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    this.all.add(waiter);
    for (const key of keys) {
      let set = this.byKey.get(key);
      if (set === undefined) this.byKey.set(key, (set = new Set()));
      set.add(waiter);
    }
    return { outcome, cancel: () => finish('aborted') };
  }

  wake(change: TaskChange): void {
    for (const key of [taskKey(change.id), agentKey(change.requesterId), agentKey(change.assigneeId)]) {
      for (const waiter of [...(this.byKey.get(key) ?? [])]) if (waiter.matches(change)) waiter.settle('woken');
    }
  }

  close(): void {
    this.closed = true;
    for (const waiter of [...this.all]) waiter.settle('closed');
  }
}
