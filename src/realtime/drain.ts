/**
 * Work the realtime layer has started and not finished (event handlers, connection setup and
 * teardown), so that a graceful shutdown can wait for it before closing sockets and storage.
 */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  get size(): number {
    return this.count;
  }

  /** One piece of work started; `leave` once it is done. */
  enter(): void {
    this.count++;
  }

  leave(): void {
    if (--this.count === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves when nothing is in flight, or after `timeoutMs` (true when it drained in time). */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
