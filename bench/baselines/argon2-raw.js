import { hash, verify } from '@node-rs/argon2';

/**
 * Scenario 4's baseline: raw Argon2id verifies per second with the service's parameters
 * (m = 19456 KiB, t = 2, p = 1), `CONCURRENCY` verifies in flight on the libuv pool, for
 * `DURATION_MS`. Prints one JSON line.
 */
const options = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }; // 2: Argon2id
const concurrency = Number(process.env.CONCURRENCY ?? 16);
const durationMs = Number(process.env.DURATION_MS ?? 5000);
const secret = 'a'.repeat(64);
const stored = await hash(secret, options);

let count = 0;
const started = performance.now();
const end = started + durationMs;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      if (!(await verify(stored, secret, options))) throw new Error('verify failed');
      count++;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ verifies: count, seconds, perSecond: count / seconds }));
