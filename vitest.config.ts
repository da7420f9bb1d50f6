import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  // Tests import the workspace packages from their sources, as tsconfig.json's paths do.
  resolve: {
    alias: [
      { find: /^@agent-messaging\/protocol$/, replacement: here('packages/protocol/src/index.ts') },
      { find: /^@agent-messaging\/client\/cli$/, replacement: here('packages/client/src/cli/index.ts') },
      { find: /^@agent-messaging\/client$/, replacement: here('packages/client/src/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Argon2id at 19 MiB per hash and real servers per file: two workers fit two cores.
    pool: 'forks',
    maxWorkers: 2,
  },
});
