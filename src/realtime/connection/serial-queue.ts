import type { InFlight } from '../drain.js';

/**
 * Runs one socket's work one task at a time, in arrival order: two `message:send` events from one
 * connection are stored, acknowledged and broadcast in the order they were sent.
 */
export class SerialQueue {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;

  constructor(private readonly inFlight: InFlight) {}

  /** Tasks queued or running. */
  get pending(): number {
    return this.waiting;
  }

  push(task: () => Promise<void>): void {
    this.waiting++;
    const run = this.tail
      .then(task)
      // Tasks handle their own errors; this only keeps one failure from stopping the queue.
      .catch(() => undefined)
      .finally(() => {
        this.waiting--;
      });
    this.tail = run;
    this.inFlight.track(run);
  }
}
