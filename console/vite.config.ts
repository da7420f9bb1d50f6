import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The console (docs/console.md), built by `npm run build` into dist/console/, which the service
 * serves under /console/ (src/http/routes/console.routes.ts). Content-hashed assets, one module
 * script, one style sheet: nothing inline, so `Content-Security-Policy: default-src 'self'` holds.
 */
const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/console/',
  // Kept out of node_modules, which the worktrees share.
  cacheDir: here('../dist/.vite-cache'),
  publicDir: false,
  logLevel: 'warn',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  // The client library from its sources (the package @agent-messaging/client).
  resolve: { alias: { '@agent-messaging/client': here('../packages/client/src/index.ts'), '@agent-messaging/protocol': here('../packages/protocol/src/index.ts') } },
  build: {
    outDir: here('../dist/console'),
    emptyOutDir: true,
    // The preload polyfill would be an inline script; every browser the console targets has modulepreload.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URLs (default-src 'self' refuses them).
    assetsInlineLimit: 0,
    target: 'es2022',
    sourcemap: false,
  },
});
