import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'packages/*/dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly', performance: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  {
    // The house rule: the domain is transport-free. Services in core/ never see Fastify, Socket.IO or
    // a Redis client; they reach other nodes and clients through ports wired in context.ts.
    files: ['src/core/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['fastify', 'fastify/*', '@fastify/*'], message: 'core/ is transport-free: no Fastify (see docs/architecture.md).' },
          { group: ['socket.io', 'socket.io/*', 'socket.io-client', '@socket.io/*', 'engine.io', 'engine.io/*'], message: 'core/ is transport-free: no Socket.IO (see docs/architecture.md).' },
          { group: ['ioredis', 'ioredis/*'], message: 'core/ is transport-free: no Redis client; publish domain events, the event bridge carries them (see docs/architecture.md).' },
          { group: ['**/http/*', '**/http/**', '**/realtime/*', '**/realtime/**'], message: 'core/ must not import the transports (http/, realtime/).' },
        ],
      }],
    },
  },
  {
    // The client library runs in browsers too: socket.io-client and web globals only, and nothing
    // of the server: the wire's schemas and types come from the protocol package, by type imports.
    files: ['packages/client/src/**'],
    ignores: ['packages/client/src/cli/**', 'packages/client/src/mcp-stdio.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['node:*', 'fs', 'path', 'crypto', 'events', 'util'], message: 'The client library runs in browsers: no Node.js modules.' },
          { group: ['../*', '!../src/*'], message: 'The client package imports nothing outside itself but its dependencies.' },
          { group: ['@agent-messaging/protocol'], allowTypeImports: true, message: 'The client library imports the protocol by `import type` only (no TypeBox at run time).' },
        ],
      }],
    },
  },
  {
    // The packages never reach into the server (src/) or each other's files.
    files: ['packages/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['**/src/*', '../../*'], message: 'A package imports other packages by name only, never the server.' }],
      }],
    },
  },
  {
    // The console runs in browsers on the client library only, and renders every body as text.
    files: ['console/src/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['node:*', '**/src/*', '**/src/**'], message: 'console/ runs in browsers: preact and @agent-messaging/client only.' }],
      }],
      'no-restricted-syntax': ['error',
        { selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']", message: 'Bodies are text: no HTML from data (docs/console.md).' },
        { selector: "MemberExpression[property.name=/^(innerHTML|outerHTML)$/]", message: 'Bodies are text: no HTML from data (docs/console.md).' },
      ],
    },
  },
  {
    files: ['src/cli/**', 'packages/client/src/cli/**', 'bench/**', 'examples/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // The bench and the examples are plain ESM JavaScript run by Node 20 directly.
    files: ['bench/**', 'examples/**', 'scripts/**'],
    languageOptions: { globals: { fetch: 'readonly', AbortSignal: 'readonly', URLSearchParams: 'readonly' } },
  },
);
