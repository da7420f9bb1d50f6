import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, disconnected, type ClientSocket } from '../helpers/ws.js';
import { waitUntil } from '../helpers/wait.js';

type Entry = { id: string; online: boolean };

describe('directory online flag from live WebSocket connections', () => {
  const { server, api } = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    admin = await newAdmin(api);
    alice = await newAgent(api);
  });
  afterAll(async () => {
    for (const s of sockets) s.disconnect();
  });

  const onlineOf = async (agentId: string): Promise<boolean> => {
    const res = await api.get('/api/companies/default/agents/directory', { jwt: admin.jwt });
    expect(res.status).toBe(200);
    const entry = (res.body.agents as Entry[]).find((a) => a.id === agentId);
    expect(entry).toBeDefined();
    return entry!.online;
  };

  it('shows an agent online while it has a connection, and offline after the last one closes', async () => {
    expect(await onlineOf(alice.id)).toBe(false);
    const first = await connectReady(server.url, alice.jwt);
    const second = await connectReady(server.url, alice.jwt);
    sockets.push(first.socket, second.socket);
    expect(await onlineOf(alice.id)).toBe(true);

    const gone = disconnected(first.socket);
    first.socket.disconnect();
    await gone;
    expect(await onlineOf(alice.id)).toBe(true); // the second connection is still live

    second.socket.disconnect();
    // The server notices the close asynchronously: poll rather than sleep a fixed time.
    await waitUntil('alice offline', async () => !(await onlineOf(alice.id)), 5000);
  });
});
