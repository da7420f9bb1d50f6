import { afterAll, beforeAll } from 'vitest';
import { Api } from './api.js';
import { startTestServer, type TestServer, type TestServerOptions } from './server.js';

/**
 * The server of a describe block and a client of it. Both may be taken (destructured) when the
 * block is declared; they are usable once its beforeAll has run, and throw before.
 */
export interface TestSuite {
  readonly server: TestServer;
  readonly api: Api;
}

/**
 * Registers the beforeAll that starts a server (startTestServer(options)) and the afterAll that
 * closes it; call it in a describe block (or at the top of a file), before the hooks that use it.
 * `options` may be a function, for options made in an earlier beforeAll (a presence store, a receiver).
 */
export function useTestServer(options: TestServerOptions | (() => TestServerOptions | Promise<TestServerOptions>) = {}): TestSuite {
  let started: TestServer | undefined;
  const get = (): TestServer => {
    if (!started) throw new Error('useTestServer: the server is used before its beforeAll has started it');
    return started;
  };
  beforeAll(async () => {
    started = await startTestServer(typeof options === 'function' ? await options() : options);
  });
  afterAll(() => started?.close());
  // Late-bound views of the started server, so that a file can name them once at declaration.
  const server: TestServer = {
    get app() {
      return get().app;
    },
    get url() {
      return get().url;
    },
    get db() {
      return get().db;
    },
    close: (closeOptions) => get().close(closeOptions),
  };
  return { server, api: new Api(() => get().url) };
}
