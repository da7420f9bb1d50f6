import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdminAgentRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { CLI_JS, ensureBuilt, ROOT } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/mcp.md: `ams mcp` (AMS_URL, AMS_API_TOKEN) gives the same tools over stdio, spawned
// by the SDK's own stdio client as an MCP host would.

/** `ams mcp` as a client process of the SDK, with exactly this environment (plus PATH). */
async function spawnAmsMcp(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI_JS, 'mcp'], cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'ams-stdio-test', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (err) {
    await transport.close(); // ends the process (its stdin closes)
    throw Object.assign(err as Error, { stderr });
  }
  return { client, stderr: () => stderr };
}

describe('ams mcp: the tools over stdio', { timeout: 60_000 }, () => {
  const t = useTestServer();
  let admin: TestAgent;
  let agent: TestAgent;
  let roomId: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    await ensureBuilt();
    ({ admin, agent, roomId } = await newAdminAgentRoom(t.api));
  }, 120_000);
  afterAll(async () => {
    for (const client of clients) await client.close();
  });

  it('lists the service\'s tools and calls them as the token\'s agent: success and failure', async () => {
    const { client } = await spawnAmsMcp({ AMS_URL: t.server.url, AMS_API_TOKEN: agent.apiToken });
    clients.push(client);
    const { tools } = await client.listTools();
    // Exactly the tools /mcp serves over HTTP.
    const http = await connectMcp(t.server.url, agent.apiToken);
    clients.push(http);
    const served = (await http.listTools()).tools.map((tool) => tool.name).sort();
    expect(tools.map((tool) => tool.name).sort()).toEqual(served);
    expect(served).toContain('send_direct_message');
    expect(client.getServerVersion()?.name).toBe('agent-messaging-service');

    expect((await callTool(client, 'whoami')).data.agentId).toBe(agent.id);
    await sendMessage(t.api, admin, roomId, 'over stdio?');
    const sent = await callTool(client, 'send_message', { room: roomId, body: 'yes, over stdio' });
    expect(sent.data.message).toMatchObject({ senderId: agent.id, seq: 2 });
    const read = await callTool(client, 'read_messages', { room: roomId });
    expect(read.data.messages.map((m: { body: string; senderName: string }) => [m.senderName, m.body])).toEqual([
      [agent.name, 'yes, over stdio'],
      [admin.name, 'over stdio?'],
    ]);
    const missing = await callTool(client, 'read_messages', { room: 'no-such-room' });
    expect(missing.text).toMatch(/^ROOM_NOT_FOUND: /);
  });

  it('a refused token: the initialize request gets a JSON-RPC error naming the 401, and a line on stderr', async () => {
    const bad = `agt_${'1'.repeat(12)}_${'2'.repeat(64)}`;
    const failure = await spawnAmsMcp({ AMS_URL: t.server.url, AMS_API_TOKEN: bad }).catch((err: unknown) => err as Error & { stderr: string });
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/The service at .* failed: .*Invalid or expired API token/);
    expect((failure as { stderr: string }).stderr).toMatch(/^ams mcp: /m);
  });

  it('without an API token: a usage error (exit code 2)', async () => {
    const result = await runAms({ AMS_URL: t.server.url }, 'mcp');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^ams: mcp needs --token <API token> or AMS_API_TOKEN/);
  });
});
