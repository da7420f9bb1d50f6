import { hash, verify } from '@node-rs/argon2';

/** Argon2id, 19 MiB, 2 iterations, 1 lane (docs/protocol.md, API tokens). Runs on the libuv pool, off the event loop. */
// `Algorithm` is an ambient const enum, which isolated modules cannot read: 2 is Algorithm.Argon2id.
const ARGON2_ID = 2;
const ARGON2_OPTIONS = { algorithm: ARGON2_ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const hashSecret = (secret: string): Promise<string> => hash(secret, ARGON2_OPTIONS);

export async function verifySecret(secretHash: string, secret: string): Promise<boolean> {
  try {
    return await verify(secretHash, secret, ARGON2_OPTIONS);
  } catch {
    return false; // a malformed stored hash never authenticates
  }
}
