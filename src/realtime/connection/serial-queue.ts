import type { InFlight } from '../drain.js';

/** The last step of a pipelined task (its acknowledgement): run in the order the tasks were pushed. */
export type Finish = () => void;

const ignore = (): void => undefined;

/** Told each time a task of the queue finishes (the in-flight bound resumes reading with it). */
export interface SettledListener {
  settled(): void;
}

const NOBODY: SettledListener = { settled: ignore };

/** A task of the queue, from the moment it is pushed until it has finished. */
interface Slot {
  /** An exclusive task; null for a pipelined one. */
  run: (() => Promise<void>) | null;
  /** A pipelined task's first part; null for an exclusive one. */
  begin: (() => Promise<{ rest: Promise<Finish> }>) | null;
  /** Its last step once it may run (a pipelined task's rest settled; `ignore` when nothing is left to run). */
  finish: Finish | null;
}

/**
 * One socket's events in order, with pipelining where order allows it.
 *
 * - `push(task)`: an exclusive task; it starts once every earlier task has finished and later tasks
 *   wait for all of it (`room:join`, `room:leave`, the connection's setup and teardown...).
 * - `pipeline(begin)`: `begin` runs once the earlier tasks have begun (and earlier exclusive ones
 *   finished), so what it queues is queued in arrival order (a `message:send` enters its group commit);
 *   it returns the rest of the task, which runs concurrently with later tasks' `begin`, as a promise
 *   of the task's last step. That step runs once the promise settled and every earlier task
 *   finished: acknowledgements leave in the order the events arrived.
 *
 * So two `message:send` of one connection are stored, numbered, broadcast and acknowledged in the
 * order sent while the second is validated during the first's commit, and an event that is not
 * pipelined sees every earlier send committed and acknowledged (a `room:leave` after a send).
 *
 * The order is kept as state (the tasks not finished, how many of them have started) rather than as
 * chains of promises: every message sent goes through here, and a chain cost it ten promises.
 * Tasks handle their own errors: a failure only ends its task (a pipelined one without a last step).
 */
export class SerialQueue {
  /** Tasks not finished yet, oldest first; the first `started` of them have started. */
  private slots: Slot[] = [];
  private started = 0;
  /** An exclusive task, or a pipelined task's `begin`, is running: nothing else starts meanwhile. */
  private busy = false;
  private pumping = false;
  private pumpAgain = false;
  private onSettled: SettledListener = NOBODY;

  constructor(private readonly inFlight: InFlight) {}

  /** `listener` is told each time a task finishes (an object, not a closure: one per held connection). */
  whenSettled(listener: SettledListener): void {
    this.onSettled = listener;
  }

  /** Tasks queued, running, or waiting for their last step. */
  get pending(): number {
    return this.slots.length;
  }

  push(task: () => Promise<void>): void {
    this.add({ run: task, begin: null, finish: null });
  }

  /** `begin` and the promise it returns must not reject: failures are answered by the Finish step. */
  pipeline(begin: () => Promise<{ rest: Promise<Finish> }>): void {
    this.add({ run: null, begin, finish: null });
  }

  private add(slot: Slot): void {
    this.slots.push(slot);
    this.inFlight.enter();
    this.pump();
  }

  /** Runs the last steps that may run, in order, then starts the next task if it may start. */
  private pump(): void {
    // A last step or a start may settle synchronously and ask again: that is one more round here.
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        this.finishReady();
        this.startNext();
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private finishReady(): void {
    while (this.slots.length > 0 && this.slots[0]!.finish !== null) {
      const { finish } = this.slots.shift()!;
      this.started--;
      try {
        finish!();
      } catch {
        // Tasks handle their own errors: one failure does not stop the queue.
      }
      this.inFlight.leave();
      try {
        this.onSettled.settled();
      } catch {
        // A listener's failure neither: the task has finished.
      }
    }
  }

  private startNext(): void {
    if (this.busy || this.started === this.slots.length) return;
    const slot = this.slots[this.started]!;
    // An exclusive task waits for every earlier task to finish.
    if (slot.run !== null && this.started > 0) return;
    this.started++;
    this.busy = true;
    const done = (finish: Finish): void => {
      slot.finish = finish;
      this.pump();
    };
    if (slot.run !== null) {
      settle(slot.run, () => {
        this.busy = false;
        done(ignore);
      });
      return;
    }
    settle(slot.begin!, (begun) => {
      this.busy = false;
      if (begun === undefined) return done(ignore);
      begun.rest.then(done, () => done(ignore));
      this.pump();
    });
  }
}

/** Runs `task` and calls `then` once with its value, or with undefined when it threw or rejected. */
function settle<T>(task: () => Promise<T>, then: (value: T | undefined) => void): void {
  let promise: Promise<T>;
  try {
    promise = task();
  } catch {
    then(undefined);
    return;
  }
  promise.then(then, () => then(undefined));
}
