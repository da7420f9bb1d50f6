import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { MCP_PATH } from '@agent-messaging/protocol';

export interface StdioProxyOptions {
  /** The running service, e.g. http://localhost:3000 (its `/mcp` is used). */
  url: string;
  /** Sent as the bearer of every request. */
  apiToken: string;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

/** JSON-RPC's "server error" range: the service could not be reached or refused the credential. */
const UPSTREAM_ERROR = -32000;

/** The service's `/mcp` endpoint for a base URL (a URL that already names it is kept). */
export function mcpEndpoint(url: string): URL {
  const base = new URL(url);
  return base.pathname.replace(/\/+$/, '').endsWith(MCP_PATH) ? base : new URL(MCP_PATH, base);
}

/**
 * `ams mcp`: the service's MCP tools over stdio, for clients that start a process. A relay of
 * JSON-RPC messages between stdin/stdout and the running service's `/mcp` (the SDK's two
 * transports), so there is one implementation of the tools: the service's. Resolves when stdin ends.
 */
export async function runStdioProxy(options: StdioProxyOptions): Promise<void> {
  const upstream = new StreamableHTTPClientTransport(mcpEndpoint(options.url), {
    requestInit: { headers: { Authorization: `Bearer ${options.apiToken}` } },
  });
  const local = new StdioServerTransport(options.stdin as never, options.stdout as never);
  const initializeIds = new Set<string | number>();

  upstream.onmessage = (message) => {
    // The negotiated version goes on every later request, as the SDK's own client does.
    if (isJSONRPCResultResponse(message) && initializeIds.delete(message.id) && typeof message.result.protocolVersion === 'string') {
      upstream.setProtocolVersion(message.result.protocolVersion);
    }
    void local.send(message);
  };
  upstream.onerror = (err) => console.error(`ams mcp: ${err.message}`);
  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializeIds.add(message.id);
    upstream.send(message).catch((err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      console.error(`ams mcp: ${reason}`);
      // A request always gets its answer, so the client does not wait forever.
      if (isJSONRPCRequest(message)) void local.send({ jsonrpc: '2.0', id: message.id, error: { code: UPSTREAM_ERROR, message: `The service at ${options.url} failed: ${reason}` } });
    });
  };

  await upstream.start();
  await local.start();
  const stdin = options.stdin ?? process.stdin;
  await new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
  });
  await local.close();
  await upstream.close();
}
