import type { WaitSlots } from '../../limits/wait-slots.js';

/**
 * The one registry of held requests (the inbox's, the tasks', and whatever else long-polls): a
 * waiter is a few small objects in memory, filed under the keys a change can wake it by (a room, a
 * task, an agent). No timer per key, no database connection. `wake(keys, change)` wakes the waiters
 * filed under any of the keys whose predicate accepts the change; the feature's own waker (the inbox's
 * `wake(roomId, senderId)`, the tasks' `wake(change)`) only names the keys.
 */
export type WaitOutcome = 'woken' | 'timeout' | 'closed' | 'aborted';

export interface Wait {
  /** Settles once: a change came, the time ran out, the server is closing, or the caller gave up. */
  readonly outcome: Promise<WaitOutcome>;
  /** Withdraws the waiter (its outcome settles as 'aborted'). */
  cancel(): void;
}

interface Waiter<C> {
  keys: readonly string[];
  matches(change: C): boolean;
  settle(outcome: WaitOutcome): void;
}

/** Told when the registry starts holding waiters (its first) and when it holds none any more. */
export interface Occupancy {
  busy(): void;
  idle(): void;
}

export class Waiters<C> {
  private readonly byKey = new Map<string, Set<Waiter<C>>>();
  private readonly all = new Set<Waiter<C>>();
  private closed = false;

  constructor(private readonly occupancy?: Occupancy) {}

  /** Waiting requests right now. */
  get size(): number {
    return this.all.size;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Registers a waiter on `keys` for at most `timeoutMs`. Register before reading: a change committed
   * between the read and the wait then still wakes it.
   */
  wait(keys: readonly string[], matches: (change: C) => boolean, timeoutMs: number, signal?: AbortSignal): Wait {
    let settle!: (outcome: WaitOutcome) => void;
    const outcome = new Promise<WaitOutcome>((resolve) => {
      settle = resolve;
    });
    if (this.closed || signal?.aborted) {
      settle(this.closed ? 'closed' : 'aborted');
      return { outcome, cancel: () => undefined };
    }
    let done = false;
    const onAbort = (): void => finish('aborted');
    const waiter: Waiter<C> = { keys, matches, settle: (o) => finish(o) };
    const timer = setTimeout(() => finish('timeout'), Math.max(0, timeoutMs));
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
    if (this.all.size === 1) this.occupancy?.busy();
    for (const key of keys) {
      let set = this.byKey.get(key);
      if (set === undefined) this.byKey.set(key, (set = new Set()));
      set.add(waiter);
    }
    return { outcome, cancel: () => finish('aborted') };
  }

  /** Wakes every waiter filed under one of `keys` that accepts `change` (each once). */
  wakeKeys(keys: readonly string[], change: C): void {
    for (const key of keys) {
      const set = this.byKey.get(key);
      if (set === undefined) continue;
      for (const waiter of [...set]) if (waiter.matches(change)) waiter.settle('woken');
    }
  }

  /** Answers every waiter now and every later one at once (graceful shutdown). */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.all]) waiter.settle('closed');
  }

  private remove(waiter: Waiter<C>): void {
    if (this.all.delete(waiter) && this.all.size === 0) this.occupancy?.idle();
    for (const key of waiter.keys) {
      const set = this.byKey.get(key);
      if (set === undefined) continue;
      set.delete(waiter);
      if (set.size === 0) this.byKey.delete(key);
    }
  }
}

export interface LongPoll<R> {
  agentId: string;
  /** Epoch milliseconds after which it answers what it has. */
  deadline: number;
  /** The agent's wait slots (src/limits/wait-slots.ts, shared by every transport). */
  slots: Pick<WaitSlots, 'acquire'>;
  /** The registry: once it is closed nothing more waits. */
  registry: { readonly isClosed: boolean };
  signal?: AbortSignal;
  /** The caller holds a slot already (an A2A stream holds one for its whole life). */
  slotHeld?: boolean;
  /** Registers the waiter (before each read) for at most `leftMs`. */
  register(leftMs: number): Wait | Promise<Wait>;
  read(): Promise<R>;
  /** Whether a read is the answer (something came), so nothing need wait. */
  found(read: R): boolean;
}

/** How a long poll ended: with a read to answer, or with a wait that ended without a wake-up. */
export type LongPollEnd<R> = { kind: 'read'; read: R } | { kind: 'ended'; outcome: WaitOutcome };

/**
 * The one long-poll loop: take a wait slot, register, read; answer a read that found something (or
 * that may not wait: no time left, closing, aborted, no slot); otherwise wait and, woken, read again
 * (the change committed before its wake-up). Between reads nothing is held but the registry's entry:
 * no connection, no transaction. Beyond the agent's slots it still answers what there is; only when
 * that is nothing, and it would have to wait, is it refused (the slots' RATE_LIMITED).
 */
export async function longPoll<R>(poll: LongPoll<R>): Promise<LongPollEnd<R>> {
  const { slots, registry, signal } = poll;
  let release: (() => void) | undefined = poll.slotHeld === true ? () => undefined : undefined;
  let refusal: unknown;
  try {
    for (;;) {
      const left = poll.deadline - Date.now();
      const mayWait = left > 0 && !registry.isClosed && signal?.aborted !== true;
      if (mayWait && release === undefined && refusal === undefined) {
        try {
          release = slots.acquire(poll.agentId);
        } catch (err) {
          refusal = err;
        }
      }
      const wait = mayWait && release !== undefined ? await poll.register(left) : null;
      const read = await poll.read();
      if (poll.found(read) || wait === null) {
        wait?.cancel();
        if (!poll.found(read) && refusal !== undefined) throw refusal;
        return { kind: 'read', read };
      }
      const outcome = await wait.outcome;
      if (outcome !== 'woken') return { kind: 'ended', outcome };
    }
  } finally {
    release?.();
  }
}
