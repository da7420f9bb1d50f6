/**
 * `oidc-provider` prints "Unsupported runtime" to stderr when it is loaded on Node.js 20 (it asks
 * for 22; it runs on 20.19, this project's engine, and its tests pass there). That line would be on
 * every start, and a clean stderr is part of how the process is checked (test/integration/shutdown.test.ts):
 * imported just before the library, this filters that one warning while the library loads, and
 * provider.ts restores `console.warn` right after.
 */
const original = console.warn;
console.warn = (...args: unknown[]): void => {
  if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime')) return;
  original(...args);
};

export function restoreConsoleWarn(): void {
  console.warn = original;
}
