import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';

/** Argon2id, 19 MiB, 2 iterations, 1 lane (SPEC.md). Runs on the libuv pool, off the event loop. */
// `Algorithm` is an ambient const enum, which isolated modules cannot read: 2 is Algorithm.Argon2id.
const ARGON2_ID = 2;
const ARGON2_OPTIONS = { algorithm: ARGON2_ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/**
 * At most one Argon2 computation per usable core at a time; the others wait here, in a queue,
 * instead of on the libuv pool. Argon2id is memory-hard: more computations than cores only share
 * the caches, so the rate does not rise (it falls), while the pool threads crowd out the event
 * loop, which must keep answering everything else during a storm of session exchanges. Per
 * process, like the pool and the cores it guards.
 */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

const slots = new Slots(Math.max(1, availableParallelism()));

export const hashSecret = (secret: string): Promise<string> => slots.run(() => hash(secret, ARGON2_OPTIONS));

export async function verifySecret(secretHash: string, secret: string): Promise<boolean> {
  try {
    return await slots.run(() => verify(secretHash, secret, ARGON2_OPTIONS));
  } catch {
    return false; // a malformed stored hash never authenticates
  }
}
