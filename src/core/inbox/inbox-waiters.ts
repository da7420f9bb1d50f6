/**
 * Held inbox requests (`GET /api/v1/inbox?wait=S`), woken when a message from someone else arrives
 * in one of the waiting agent's rooms. A waiter is a few small objects in memory: no timer per room,
 * no database connection.
 *
 * `wake(roomId, senderId)` is the one entry point for "a message was committed": the event bridge
 * (cluster/event-bridge.ts) calls it for every `message.created` committed here and, with several
 * nodes, for the messages other nodes committed.
 */
export interface InboxWaker {
  /** `attention`: who the message is for the attention of; only they wake from an attention wait. */
  wake(roomId: string, senderId: string, attention?: readonly string[]): void;
}

export type WaitOutcome = 'woken' | 'timeout' | 'closed' | 'aborted';

export interface InboxWait {
  /** Settles once: a message came, the time ran out, the server is closing, or the caller gave up. */
  readonly outcome: Promise<WaitOutcome>;
  /** Withdraws the waiter (its outcome settles as 'aborted'). */
  cancel(): void;
}

interface Waiter {
  agentId: string;
  /** Woken only by a message for its agent's attention (`filter=attention`). */
  attentionOnly: boolean;
  roomIds: readonly string[];
  settle(outcome: WaitOutcome): void;
}

export class InboxWaiters implements InboxWaker {
  private readonly byRoom = new Map<string, Set<Waiter>>();
  private readonly all = new Set<Waiter>();
  private closed = false;

  /** Waiting requests right now. */
  get size(): number {
    return this.all.size;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Registers a waiter for `agentId` on `roomIds` for at most `timeoutMs`. Register before reading
   * the inbox: a message committed between the read and the wait then still wakes it.
   */
  wait(agentId: string, roomIds: readonly string[], timeoutMs: number, signal?: AbortSignal, attentionOnly = false): InboxWait {
    let settle!: (outcome: WaitOutcome) => void;
    const outcome = new Promise<WaitOutcome>((resolve) => {
      settle = resolve;
    });
    if (this.closed) {
      settle('closed');
      return { outcome, cancel: () => undefined };
    }
    if (signal?.aborted) {
      settle('aborted');
      return { outcome, cancel: () => undefined };
    }
    const onAbort = (): void => finish('aborted');
    const waiter: Waiter = { agentId, attentionOnly, roomIds, settle: (o) => finish(o) };
    const timer = setTimeout(() => finish('timeout'), Math.max(0, timeoutMs));
    let done = false;
    const finish = (o: WaitOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      this.remove(waiter);
      settle(o);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    this.all.add(waiter);
    for (const roomId of roomIds) {
      let set = this.byRoom.get(roomId);
      if (set === undefined) this.byRoom.set(roomId, (set = new Set()));
      set.add(waiter);
    }
    return { outcome, cancel: () => finish('aborted') };
  }

  wake(roomId: string, senderId: string, attention: readonly string[] = []): void {
    const set = this.byRoom.get(roomId);
    if (set === undefined) return;
    // Own messages are never unread: they wake nobody of their sender.
    for (const waiter of [...set]) {
      if (waiter.agentId === senderId) continue;
      if (waiter.attentionOnly && !attention.includes(waiter.agentId)) continue;
      waiter.settle('woken');
    }
  }

  /** Answers every waiter now and every later one at once (graceful shutdown). */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.all]) waiter.settle('closed');
  }

  private remove(waiter: Waiter): void {
    this.all.delete(waiter);
    for (const roomId of waiter.roomIds) {
      const set = this.byRoom.get(roomId);
      if (set === undefined) continue;
      set.delete(waiter);
      if (set.size === 0) this.byRoom.delete(roomId);
    }
  }
}
