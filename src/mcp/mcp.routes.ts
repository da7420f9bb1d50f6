import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_PATH } from '@agent-messaging/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import type { Principal } from '../core/principal.js';
import { AppError, unauthenticated } from '../errors.js';
import { packageVersion } from '../config/version.js';
import { registerResources } from './resources.js';
import { callTool, isToolName, TOOL_LIST } from './tools/index.js';

const SERVER_INFO = { name: 'agent-messaging-service', version: packageVersion() };
/**
 * What a Server builds for itself unless given one (an Ajv instance: most of a request's CPU when
 * built per request); it checks only elicitation answers, which these tools never ask for.
 */
const JSON_SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

const INSTRUCTIONS = 'Agent Messaging Service: rooms of agents exchanging messages, and a social feed. '
  + 'A typical loop: fetch_inbox with wait_seconds to wait for work, read_messages for context, send_message to answer, '
  + 'then mark_read with the room and the seq of the last message handled. Rooms are named by id or slug.';

/**
 * One MCP server for one request. Stateless (no `Mcp-Session-Id`): every request carries its
 * credential and stands alone, so any node behind a load balancer answers any request, and
 * nothing is kept between requests but the tool list, built once (tools/index.ts).
 *
 * The SDK's low-level `Server` rather than `McpServer.registerTool`: McpServer answers arguments
 * that fail its schema with its own text ("MCP error -32602: Input validation error ..."), where
 * the protocol (docs/mcp.md) wants `VALIDATION_ERROR: ...` with the field, as REST says
 * it; and it would convert the 13 schemas for every request's `tools/list`.
 */
function createMcpServer(ctx: AppContext, principal: Principal, scopeRefused?: (action: string) => void): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: JSON_SCHEMA_VALIDATOR });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_LIST }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    if (!isToolName(name)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${name}"; tools/list names the tools`);
    return callTool(name, args, { ctx, principal, signal: extra.signal, ...(scopeRefused ? { scopeRefused } : {}) });
  });
  registerResources(server, ctx, principal);
  return server;
}

/** The headers the SDK's transport reads (the others would only cost copying). */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'] as const;

/** The Fastify request as the Web-standard Request the SDK's transport reads (the body is passed parsed). */
function toWebRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(`http://${request.host || 'localhost'}${request.url}`, { method: request.method, headers });
}

/** The OAuth protected resource: `<PUBLIC_URL>/mcp` (docs/oauth.md). */
export const mcpResource = (ctx: AppContext): string => `${ctx.publicUrl.value}${MCP_PATH}`;

/** Where `/mcp`'s challenges point a client to discover how to get a token (RFC 9728). */
export const resourceMetadataUrl = (ctx: AppContext): string => `${ctx.publicUrl.value}/.well-known/oauth-protected-resource${MCP_PATH}`;

/** `/mcp` and the discovery documents answer CORS requests from any origin, and show the challenge. */
export function allowAnyOrigin(reply: FastifyReply): void {
  void reply.header('Access-Control-Allow-Origin', '*');
  void reply.header('Access-Control-Expose-Headers', 'WWW-Authenticate, Retry-After, Mcp-Session-Id, Mcp-Protocol-Version');
}

export function answerPreflight(reply: FastifyReply): FastifyReply {
  allowAnyOrigin(reply);
  void reply.header('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
  void reply.header('Access-Control-Allow-Headers', 'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID');
  void reply.header('Access-Control-Max-Age', '600');
  return reply.status(204).send();
}

/**
 * 401 with the challenge an MCP client expects (RFC 6750, RFC 9728): why the credential sent was
 * refused (decided by core/auth: invalid, expired, revoked, agent disabled), or that one is
 * required, and where to find how to get one (`resource_metadata`, docs/oauth.md). Refusals are
 * thrown: the HTTP layer's error handler sends them as every route's, with the headers set here.
 */
function refuseUnauthenticated(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): never {
  const sent = request.authFailure !== null;
  void reply.header('WWW-Authenticate', `Bearer ${sent ? 'error="invalid_token", ' : ''}resource_metadata="${resourceMetadataUrl(ctx)}"`);
  throw request.authFailure ?? unauthenticated('A JWT or an API token is required: Authorization: Bearer <token>, or an OAuth access token (WWW-Authenticate names its resource_metadata)');
}

/** A tool call refused for a scope its OAuth access token lacks: answered 403 with a challenge. */
class InsufficientScope extends Error {
  constructor(readonly scope: string) {
    super(`This access token does not grant ${scope}`);
  }
}

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A `tools/call` whose params the SDK would refuse with its schema library's dump as an internal
 * error (-32603): `params` not an object, `name` not a string, `arguments` not an object. Answered
 * here as invalid params (-32602), saying which field, with nothing of the library's internals.
 */
function invalidToolCall(message: unknown): { id: unknown; error: { code: number; message: string } } | null {
  if (!isObject(message) || message.method !== 'tools/call' || !('id' in message)) return null;
  const params = message.params;
  let problem: string | null = null;
  if (!isObject(params)) problem = '"params" must be an object with the tool\'s "name" and "arguments"';
  else if (typeof params.name !== 'string') problem = '"params.name" must be the name of a tool (a string)';
  else if (params.arguments !== undefined && !isObject(params.arguments)) problem = '"params.arguments" must be an object of the tool\'s arguments, as tools/list describes them';
  else if (!CallToolRequestSchema.safeParse(message).success) problem = 'the tools/call request does not have the shape MCP defines';
  return problem === null ? null : { id: message.id, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${problem}` } };
}

/** Runs the JSON-RPC message(s) through a server of this request; the SDK's answer. */
async function runTransport(ctx: AppContext, principal: Principal, request: FastifyRequest, reply: FastifyReply, body: unknown): Promise<Response> {
  // The SDK replies in JSON (no SSE stream): every request gets its one answer, a held
  // fetch_inbox included, and a client that goes away closes the server, which aborts the
  // tool's signal (the inbox waiter is withdrawn).
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  // An OAuth access token lacking a tool's scope: 403 with a challenge naming it, so the client can
  // ask the person for more (API tokens and JWTs keep the tool's FORBIDDEN result).
  let refusedScope: string | null = null;
  const server = createMcpServer(ctx, principal, principal.oauth === undefined ? undefined : (action) => {
    refusedScope ??= action;
  });
  // Closed only when the client left before its answer (closing builds an error for any pending
  // request, which costs more than the rest of a call); otherwise it is garbage once answered.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) void server.close();
  });
  await server.connect(transport);
  const response = await transport.handleRequest(toWebRequest(request), { parsedBody: body });
  if (refusedScope !== null) throw new InsufficientScope(refusedScope);
  return response;
}

/** 403 with `WWW-Authenticate: Bearer error="insufficient_scope"` (RFC 6750, docs/oauth.md). */
function refuseScope(ctx: AppContext, reply: FastifyReply, err: InsufficientScope): never {
  void reply.header('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${err.scope}", resource_metadata="${resourceMetadataUrl(ctx)}"`);
  throw new AppError('FORBIDDEN', err.message, { scope: `${err.scope} required` });
}

/**
 * Runs `answer` for an OAuth access token's request registered as live on this node: ending its
 * grant (revoked, its API token revoked, its agent disabled) closes it at once (core/oauth).
 */
async function whileLive<T>(ctx: AppContext, principal: Principal, reply: FastifyReply, answer: () => Promise<T>): Promise<T> {
  if (principal.oauth === undefined || principal.tokenId === undefined) return answer();
  const forget = ctx.liveOAuth.add({
    grantId: principal.oauth.grantId,
    tokenId: principal.tokenId,
    agentId: principal.agentId,
    close: () => reply.raw.destroy(),
  });
  try {
    return await answer();
  } catch (err) {
    if (err instanceof InsufficientScope) refuseScope(ctx, reply, err);
    throw err;
  } finally {
    forget();
  }
}

/**
 * The SDK's answer as the reply. Its body is one JSON document (or none): sent as the bytes the SDK
 * encoded, cheaper than piping the Web stream, and than decoding them to a string that Fastify
 * encodes again.
 */
async function send(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  response.headers.forEach((value, name) => void reply.header(name, value));
  return reply.status(response.status).send(response.status === 202 ? undefined : Buffer.from(await response.arrayBuffer()));
}

export function mcpRoutes(app: FastifyInstance, ctx: AppContext): void {
  // JSON-RPC over HTTP, not a REST resource: /openapi.json leaves it out (its one operation would
  // say nothing of the tools); tools/list describes them, and docs/mcp.md the endpoint.
  app.options(MCP_PATH, { schema: { hide: true } }, async (_request, reply) => answerPreflight(reply));
  app.post(MCP_PATH, { config: { acceptsApiToken: true, acceptsOAuth: true }, schema: { hide: true } }, async (request, reply) => {
    allowAnyOrigin(reply);
    const principal = request.principal;
    if (principal === null) return refuseUnauthenticated(ctx, request, reply);
    return whileLive(ctx, principal, reply, () => answerPost(ctx, principal, request, reply));
  });

  // Stateless: no server-initiated stream (GET) and no session to end (DELETE). 405 is what the
  // transport's clients expect for both.
  app.route({
    method: ['GET', 'DELETE'],
    url: MCP_PATH,
    config: { acceptsApiToken: true, acceptsOAuth: true },
    schema: { hide: true },
    handler: async (request, reply) => {
      allowAnyOrigin(reply);
      if (request.principal === null) return refuseUnauthenticated(ctx, request, reply);
      void reply.header('Allow', 'POST');
      throw new AppError('METHOD_NOT_ALLOWED', 'This MCP endpoint is stateless: POST only');
    },
  });
}

/** The JSON-RPC message(s) of a POST answered: by the SDK, or here for malformed tool calls. */
async function answerPost(ctx: AppContext, principal: Principal, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  // A JSON-RPC batch costs a rate-limit point per message, as that many POSTs would: the auth
  // hook took the first (docs/mcp.md).
  const batch = Array.isArray(request.body) ? (request.body as unknown[]) : null;
  if (batch !== null) await request.chargeMore(batch.length - 1);
  const messages = batch ?? [request.body];
  const refused = messages.map(invalidToolCall);
  if (refused.every((r) => r === null)) return send(reply, await runTransport(ctx, principal, request, reply, request.body));
  // Some are answered here, the others by the SDK, in one answer (a batch's order is free).
  const answered: unknown[] = refused.filter((r) => r !== null).map((r) => ({ jsonrpc: '2.0', ...r }));
  const rest = messages.filter((_, i) => refused[i] === null);
  if (rest.length > 0) {
    const response = await runTransport(ctx, principal, request, reply, batch === null ? rest[0] : rest);
    if (response.status !== 200 && response.status !== 202) return send(reply, response);
    if (response.status === 200) {
      const others: unknown = await response.json();
      answered.push(...(Array.isArray(others) ? others : [others]));
    }
  }
  return reply.status(200).type('application/json').send(batch === null ? answered[0] : answered);
}
