import type { InFlight } from '../drain.js';

/** The last step of a pipelined task (its acknowledgement): run in the order the tasks were pushed. */
export type Finish = () => void;

const ignore = (): void => undefined;

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
 */
export class SerialQueue {
  /** Settles once the latest task has begun (a pipelined task) or finished (an exclusive one). */
  private begun: Promise<unknown> = Promise.resolve();
  /** Settles once every task pushed so far has finished. */
  private finished: Promise<unknown> = Promise.resolve();
  private count = 0;
  private onSettled: () => void = ignore;

  constructor(private readonly inFlight: InFlight) {}

  /** `listener` is told each time a task finishes (the in-flight bound resumes reading with it). */
  whenSettled(listener: () => void): void {
    this.onSettled = listener;
  }

  /** Tasks queued, running, or waiting for their last step. */
  get pending(): number {
    return this.count;
  }

  push(task: () => Promise<void>): void {
    // Tasks handle their own errors; the catch only keeps one failure from stopping the queue.
    const run = this.finished.then(task).catch(ignore);
    this.begun = run;
    this.finished = run;
    this.track(run);
  }

  /** `begin` and the promise it returns must not reject: failures are answered by the Finish step. */
  pipeline(begin: () => Promise<{ rest: Promise<Finish> }>): void {
    const started = this.begun.then(begin);
    this.begun = started.catch(ignore);
    const run = this.finished
      .then(() => started)
      .then(({ rest }) => rest)
      .then((finish) => finish())
      .catch(ignore);
    this.finished = run;
    this.track(run);
  }

  private track(run: Promise<void>): void {
    this.count++;
    this.inFlight.track(
      run.finally(() => {
        this.count--;
        this.onSettled();
      }),
    );
  }
}
