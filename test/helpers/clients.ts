import { afterAll } from 'vitest';
import { AmsClient } from '@agent-messaging/client';
import type { TestAgent } from './api.js';
import { runAms, type CliResult } from './cli.js';
import type { TestSuite } from './suite.js';

/** What a client-library test file uses against its suite's server (call in the describe block, after useTestServer). */
export interface SuiteClients {
  /** An AmsClient of `agent` (its API token), closed after the block. */
  client(agent: Pick<TestAgent, 'apiToken'>): AmsClient;
  /** `ams <args>` against the server with `token` (ensureBuilt() first, in a beforeAll). */
  ams(token: string, ...args: string[]): Promise<CliResult>;
}

export function useClients(t: TestSuite): SuiteClients {
  const clients: AmsClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  return {
    client(agent) {
      const c = new AmsClient({ url: t.server.url, apiToken: agent.apiToken });
      clients.push(c);
      return c;
    },
    ams: (token, ...args) => runAms({ AMS_URL: t.server.url, AMS_API_TOKEN: token }, ...args),
  };
}
