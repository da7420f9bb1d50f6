import { afterAll, beforeAll } from 'vitest';
import { Api } from './api.js';
import { startTestServer, type TestServer, type TestServerOptions } from './server.js';

/** The server of a describe block and a client of it, both set once its beforeAll has run. */
export interface TestSuite {
  readonly server: TestServer;
  readonly api: Api;
}

/**
 * Registers the beforeAll that starts a server (startTestServer(options)) with an Api on it and
 * the afterAll that closes it; call it in a describe block, before the hooks that use it.
 */
export function useTestServer(options: TestServerOptions = {}): TestSuite {
  let started: { server: TestServer; api: Api } | undefined;
  const get = (): { server: TestServer; api: Api } => {
    if (!started) throw new Error('useTestServer: the server is used before its beforeAll has started it');
    return started;
  };
  beforeAll(async () => {
    const server = await startTestServer(options);
    started = { server, api: new Api(server.url) };
  });
  afterAll(() => started?.server.close());
  return {
    get server() {
      return get().server;
    },
    get api() {
      return get().api;
    },
  };
}
