import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** A tool result as tests read it. */
export interface ToolOutcome {
  isError: boolean;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary structured content
  data: any;
}

/** The SDK's own client on the service's `/mcp`, authorised with a JWT or an API token. */
export async function connectMcp(baseUrl: string, bearer?: string): Promise<Client> {
  const client = new Client({ name: 'ams-test', version: '1.0.0' });
  const headers: Record<string, string> = bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` };
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), { requestInit: { headers } }));
  return client;
}

/** Calls a tool and returns its outcome: error flag, the text block, the structured content. */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOutcome> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text?: string }[];
  const text = content.filter((c) => c.type === 'text').map((c) => c.text ?? '').join('\n');
  return { isError: result.isError === true, text, data: result.structuredContent };
}
