import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/realtime/drain.js';
import { SerialQueue, type Finish } from '../../src/realtime/connection/serial-queue.js';

/** A promise settled from outside. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const settled = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/** A pipelined task whose begin and rest the test settles; what happened goes into `log`. */
function pipelined(queue: SerialQueue, log: string[], name: string) {
  const begun = deferred<void>();
  const rest = deferred<void>();
  queue.pipeline(async () => {
    log.push(`${name} begin`);
    await begun.promise;
    return { rest: rest.promise.then((): Finish => () => log.push(`${name} finish`)) };
  });
  return { begun, rest };
}

describe('SerialQueue', () => {
  it('begins pipelined tasks one after the other and finishes them in arrival order, whatever order their rests settle in', async () => {
    const queue = new SerialQueue(new InFlight());
    const log: string[] = [];
    const a = pipelined(queue, log, 'a');
    const b = pipelined(queue, log, 'b');
    const c = pipelined(queue, log, 'c');
    await settled();
    expect(log).toEqual(['a begin']); // b waits for a's begin
    a.begun.resolve();
    await settled();
    expect(log).toEqual(['a begin', 'b begin']);
    b.begun.resolve();
    c.begun.resolve();
    c.rest.resolve();
    b.rest.resolve();
    await settled();
    expect(log).toEqual(['a begin', 'b begin', 'c begin']); // a's rest is not settled: nothing finishes
    expect(queue.pending).toBe(3);
    a.rest.resolve();
    await settled();
    expect(log).toEqual(['a begin', 'b begin', 'c begin', 'a finish', 'b finish', 'c finish']);
    expect(queue.pending).toBe(0);
  });

  it('runs an exclusive task after every earlier task finished, and later tasks after it', async () => {
    const queue = new SerialQueue(new InFlight());
    const log: string[] = [];
    const a = pipelined(queue, log, 'a');
    const exclusive = deferred<void>();
    queue.push(async () => {
      log.push('x start');
      await exclusive.promise;
      log.push('x end');
    });
    const b = pipelined(queue, log, 'b');
    a.begun.resolve();
    await settled();
    expect(log).toEqual(['a begin']); // a begun, not finished: x waits
    a.rest.resolve();
    await settled();
    expect(log).toEqual(['a begin', 'a finish', 'x start']); // b waits for all of x
    exclusive.resolve();
    await settled();
    expect(log).toEqual(['a begin', 'a finish', 'x start', 'x end', 'b begin']);
    b.begun.resolve();
    b.rest.resolve();
    await settled();
    expect(log.at(-1)).toBe('b finish');
  });

  it('goes on after a failure: a begin that throws or rejects, a rest that rejects, an exclusive task that rejects, a last step that throws', async () => {
    const inFlight = new InFlight();
    const queue = new SerialQueue(inFlight);
    const log: string[] = [];
    let settledCount = 0;
    queue.whenSettled({ settled: () => settledCount++ });
    queue.pipeline(() => {
      throw new Error('begin threw');
    });
    queue.pipeline(() => Promise.reject(new Error('begin rejected')));
    queue.pipeline(async () => ({ rest: Promise.reject(new Error('rest rejected')) }));
    queue.push(() => Promise.reject(new Error('exclusive rejected')));
    queue.pipeline(async () => ({
      rest: Promise.resolve((): void => {
        throw new Error('finish threw');
      }),
    }));
    const last = pipelined(queue, log, 'last');
    last.begun.resolve();
    last.rest.resolve();
    await settled();
    expect(log).toEqual(['last begin', 'last finish']);
    expect(queue.pending).toBe(0);
    expect(settledCount).toBe(6);
    expect(await inFlight.idle(0)).toBe(true);
  });

  it('counts its tasks in flight for the graceful shutdown until their last step ran', async () => {
    const inFlight = new InFlight();
    const queue = new SerialQueue(inFlight);
    const log: string[] = [];
    const a = pipelined(queue, log, 'a');
    expect(inFlight.size).toBe(1);
    const idle = inFlight.idle(5000);
    a.begun.resolve();
    await settled();
    expect(inFlight.size).toBe(1);
    a.rest.resolve();
    expect(await idle).toBe(true);
    expect(log).toEqual(['a begin', 'a finish']);
    expect(inFlight.size).toBe(0);
  });
});
