import { isUtf8 } from 'node:buffer';
import { A2A_VERSION_HEADER, AGENT_CARD_PATH, AgentCard, formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS, type StreamResponse } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { A2A_LEGACY_PROTOCOL_VERSION } from '@a2a-js/sdk/compat/v0_3';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion, type A2ARequestHandler } from '@a2a-js/sdk/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import type { Agent } from '../core/agents/agents.store.js';
import { notFound, unauthenticated, type AppError } from '../errors.js';
import { A2A_PREFIX, agentCard } from './agent-card.js';
import { ServiceRequestHandler, toPublicA2aError } from './request-handler.js';

/** The routes (docs/a2a.md); their body limits are in http/server.ts's table. */
export const A2A_CARD_ROUTE = `${A2A_PREFIX}/:agent/${AGENT_CARD_PATH}`;
export const A2A_RPC_ROUTE = `${A2A_PREFIX}/:agent`;

/** JSON-RPC's own error codes for what is not a request at all. */
const PARSE_ERROR = -32700;

/** JSON-RPC's invalid-params code, for what the SDK's decoding would silently coerce. */
const INVALID_PARAMS = -32602;

/**
 * A message part whose `text` is there but not a string. The SDK's decoding turns any value into a
 * string (`{a: 1}` would become the body "[object Object]"), so the raw body is checked first.
 */
function hasNonStringText(body: unknown): boolean {
  const params = typeof body === 'object' && body !== null ? (body as { params?: unknown }).params : undefined;
  const message = typeof params === 'object' && params !== null ? (params as { message?: unknown }).message : undefined;
  const parts = typeof message === 'object' && message !== null ? (message as { parts?: unknown }).parts : undefined;
  if (!Array.isArray(parts)) return false;
  return parts.some((part: unknown) => typeof part === 'object' && part !== null && 'text' in part && typeof (part as { text: unknown }).text !== 'string');
}

/** A body that is not JSON: answered by the route as the protocol's parse error, not as a 400. */
const UNPARSABLE = Symbol('unparsable');

/** Where the interface is reached: the request's protocol and host (proxies trusted as configured). */
const baseUrlOf = (request: FastifyRequest): string => `${request.protocol}://${request.host}`;

/** 401 with `WWW-Authenticate: Bearer`, saying why the credential sent was refused, or that one is needed. */
function refuseUnauthenticated(request: FastifyRequest, reply: FastifyReply): never {
  void reply.header('WWW-Authenticate', 'Bearer');
  throw request.authFailure ?? unauthenticated('A JWT or an API token is required: Authorization: Bearer <token>');
}

/** The active agent of that name; 404 for an unknown or a disabled one. */
async function activeAgent(ctx: AppContext, name: unknown): Promise<Agent> {
  if (typeof name !== 'string' || name === '') throw notFound('Agent');
  const [id] = await ctx.agents.resolveIds([name]);
  const agent = id === undefined ? null : await ctx.agents.get(id);
  if (agent === null || agent.name !== name || agent.disabledAt !== null) throw notFound('Agent');
  return agent;
}

/** Every method of the handler, its refusals as the protocol's errors and nothing else's text. */
function guarded(inner: A2ARequestHandler, log: (err: unknown) => void): A2ARequestHandler {
  const fix = (err: unknown): unknown => toPublicA2aError(err, log);
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw fix(err);
    }
  };
  async function* stream(run: () => AsyncGenerator<StreamResponse, void, undefined>): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      yield* run();
    } catch (err) {
      throw fix(err);
    }
  }
  return {
    getAgentCard: () => call(() => inner.getAgentCard()),
    getAuthenticatedExtendedAgentCard: (p, c) => call(() => inner.getAuthenticatedExtendedAgentCard(p, c)),
    sendMessage: (p, c) => call(() => inner.sendMessage(p, c)),
    sendMessageStream: (p, c) => stream(() => inner.sendMessageStream(p, c)),
    getTask: (p, c) => call(() => inner.getTask(p, c)),
    cancelTask: (p, c) => call(() => inner.cancelTask(p, c)),
    createTaskPushNotificationConfig: (p, c) => call(() => inner.createTaskPushNotificationConfig(p, c)),
    getTaskPushNotificationConfig: (p, c) => call(() => inner.getTaskPushNotificationConfig(p, c)),
    listTaskPushNotificationConfigs: (p, c) => call(() => inner.listTaskPushNotificationConfigs(p, c)),
    deleteTaskPushNotificationConfig: (p, c) => call(() => inner.deleteTaskPushNotificationConfig(p, c)),
    resubscribe: (p, c) => stream(() => inner.resubscribe(p, c)),
    listTasks: (p, c) => call(() => inner.listTasks(p, c)),
  };
}

type RpcAnswer = { jsonrpc: string; id: unknown; result?: unknown; error?: unknown };
const isStream = (value: unknown): value is AsyncGenerator<RpcAnswer, void, undefined> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
const idOf = (body: unknown): unknown => {
  const id = typeof body === 'object' && body !== null && 'id' in body ? (body as { id: unknown }).id : null;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
};

/**
 * A stream's answers as Server-Sent Events, once the first is known (an error before it is a plain
 * JSON-RPC answer, as the SDK's own routes do). An error during the stream is its last event; a
 * client that goes away ends the stream (the request's signal stops the held read).
 */
async function sendStream(reply: FastifyReply, stream: AsyncGenerator<RpcAnswer, void, undefined>, id: unknown, mapError: (err: unknown) => unknown): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  let first: IteratorResult<RpcAnswer, void>;
  try {
    first = await iterator.next();
  } catch (err) {
    return void reply.status(200).type('application/json').send({ jsonrpc: '2.0', id, error: mapError(err) });
  }
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, SSE_HEADERS);
  try {
    if (first.done !== true) raw.write(formatSSEEvent(first.value));
    for (;;) {
      const next = await iterator.next();
      if (next.done === true || raw.destroyed) break;
      raw.write(formatSSEEvent(next.value));
    }
  } catch (err) {
    if (!raw.destroyed) raw.write(formatSSEErrorEvent({ jsonrpc: '2.0', id, error: mapError(err) }));
  } finally {
    await iterator.return(undefined);
    if (!raw.writableEnded) raw.end();
  }
}

/**
 * The Agent2Agent protocol (docs/a2a.md): every active agent's card and JSON-RPC endpoint, built on
 * the SDK's transport handlers (1.0, and 0.3 for a request without `A2A-Version` or with 0.3) over
 * the service's tasks. In a plugin of its own: its body parser turns malformed JSON into the
 * protocol's parse error.
 */
export function a2aRoutes(app: FastifyInstance, ctx: AppContext, depthError: (bytes: Buffer) => AppError | null): void {
  void app.register(async (a2a) => {
    a2a.removeContentTypeParser('application/json');
    a2a.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'buffer' }, (_request, body, done) => {
      const bytes = typeof body === 'string' ? Buffer.from(body) : body;
      // As every JSON body of the service: the nesting checked on the bytes before parsing (400).
      const tooDeep = depthError(bytes);
      if (tooDeep !== null) return done(tooDeep, undefined);
      if (!isUtf8(bytes)) return done(null, UNPARSABLE);
      try {
        done(null, JSON.parse(bytes.toString('utf8')) as unknown);
      } catch {
        done(null, UNPARSABLE);
      }
    });

    // Not REST resources: /openapi.json leaves them out; docs/a2a.md describes them.
    a2a.get(A2A_CARD_ROUTE, { config: { acceptsApiToken: true }, schema: { hide: true } }, async (request, reply) => {
      if (ctx.config.authzMode === 'strict' && request.principal === null) return refuseUnauthenticated(request, reply);
      const agent = await activeAgent(ctx, (request.params as { agent?: unknown }).agent);
      return reply.header('Cache-Control', 'no-cache').send(agentCard(agent, baseUrlOf(request)));
    });

    a2a.post(A2A_RPC_ROUTE, {
      config: { acceptsApiToken: true },
      schema: { hide: true },
      // Refused before its body is read.
      preParsing: async (request, reply) => {
        if (request.principal === null) refuseUnauthenticated(request, reply);
      },
    }, async (request, reply) => {
      const principal = request.principal;
      if (principal === null) return refuseUnauthenticated(request, reply);
      const target = await activeAgent(ctx, (request.params as { agent?: unknown }).agent);
      const body: unknown = request.body;
      if (body === UNPARSABLE) return reply.type('application/json').send({ jsonrpc: '2.0', id: null, error: { code: PARSE_ERROR, message: 'Parse error: the body is not JSON' } });
      if (hasNonStringText(body)) {
        return reply.type('application/json').send({ jsonrpc: '2.0', id: idOf(body), error: { code: INVALID_PARAMS, message: 'Invalid params: a text part\'s text must be a string' } });
      }
      const versionHeader = request.headers[A2A_VERSION_HEADER.toLowerCase()];
      const requestedVersion = typeof versionHeader === 'string' && versionHeader !== '' ? versionHeader : undefined;
      const legacy = (requestedVersion ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION;
      const mapError = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;

      const baseUrl = baseUrlOf(request);
      const card = AgentCard.fromJSON(agentCard(target, baseUrl));
      const context = new ServerCallContext({ requestedVersion });
      try {
        validateVersion(context.requestedVersion, card, 'JSONRPC');
      } catch (err) {
        return reply.type('application/json').send({ jsonrpc: '2.0', id: idOf(body), error: mapError(err) });
      }
      const aborted = new AbortController();
      reply.raw.once('close', () => aborted.abort());
      const log = (err: unknown): void => request.log.error({ err }, 'a2a request failed');
      const handler = guarded(new ServiceRequestHandler(ctx, principal, target, card, baseUrl, aborted.signal), log);
      const transport = legacy ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler);
      const answer: unknown = await transport.handle(body === undefined ? '' : (body as Record<string, unknown>), context);
      if (isStream(answer)) return sendStream(reply, answer, idOf(body), mapError);
      return reply.type('application/json').send(answer);
    });
  });
}
