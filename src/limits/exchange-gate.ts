import { availableParallelism } from 'node:os';
import { unavailable } from '../errors.js';

/**
 * Admission for the Argon2id work of exchanges: at most `running` compute at once, at most
 * `waiting` more wait their turn in order, and any more are refused at once (503). A storm of (bad)
 * tokens then costs bounded memory and CPU, and the event loop keeps serving everything else.
 */
export interface ExchangeGate {
  run<T>(work: () => Promise<T>): Promise<T>;
  readonly active: number;
  readonly waiting: number;
}

export function createExchangeGate(running: number, waiting: number): ExchangeGate {
  let active = 0;
  const queue: (() => void)[] = [];
  return {
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
    async run(work) {
      if (active < running) {
        active++;
      } else {
        if (queue.length >= waiting) throw unavailable('Too many session exchanges in progress; retry shortly');
        await new Promise<void>((resolve) => queue.push(resolve));
      }
      try {
        return await work();
      } finally {
        // Hand the slot straight to the next waiter, or free it.
        const next = queue.shift();
        if (next) next();
        else active--;
      }
    },
  };
}

/**
 * Argon2id (19 MiB, t=2) is CPU-bound and runs on libuv's pool (4 threads by default). On a
 * 2-core machine four hashes at once leave the event loop so little CPU that new connections wait
 * seconds to be accepted (measured with test/reliability/session-abuse.test.ts), so as many
 * hashes run at once as there are cores less one (at least one): a core stays with the event loop.
 */
export const hashParallelism = (): number => Math.max(1, availableParallelism() - 1);

export const SESSION_EXCHANGE_CONCURRENCY_DEFAULT = 64;

/**
 * The gate of `inFlight` exchanges (SESSION_EXCHANGE_CONCURRENCY), of which `parallelism` hash at
 * once (by default the number of cores less one) and the others wait their turn.
 */
export function exchangeGateFor(inFlight = SESSION_EXCHANGE_CONCURRENCY_DEFAULT, parallelism = hashParallelism()): ExchangeGate {
  const running = Math.min(inFlight, parallelism);
  return createExchangeGate(running, inFlight - running);
}
