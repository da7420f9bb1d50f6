import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Argon2id at 19 MiB per hash and real servers per file: two workers fit two cores.
    pool: 'forks',
    maxWorkers: 2,
  },
});
