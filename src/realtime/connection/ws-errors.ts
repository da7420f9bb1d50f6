import type { Logger } from 'pino';
import { detailText, toPublicError, type AppError } from '../../errors.js';
import type { AgentSocket, WsError } from '../protocol.js';

/**
 * Refusals for a passing reason (a dependency down, the server shutting down or full, a failure of
 * ours): the same connection may succeed a moment later. Every other refusal (a bad or revoked
 * token, a disabled agent, too many connections or events for the agent, a wrong namespace) stays
 * until the client changes something (docs/websocket.md, Refused connections).
 */
const PASSING_CODES: ReadonlySet<WsError['code']> = new Set(['UNAVAILABLE', 'INTERNAL']);

/**
 * Ends a connection the server refuses, at its handshake or later, after its `error` was emitted.
 * For a passing reason the transport is closed: socket.io-client sees `transport close` and
 * reconnects with its own backoff (as at a shutdown). engine.io closes once its write buffer is
 * drained, so the `error` event still reaches the client, and it drops every packet either way
 * from now on. For a lasting reason the socket is disconnected: the client sees
 * `io server disconnect`, which it never retries by itself.
 */
export function endConnection(socket: AgentSocket, code: WsError['code']): void {
  if (PASSING_CODES.has(code)) socket.conn.close();
  else socket.disconnect(true);
}

/** Refuses the connection: its `error` event, then the end that fits the reason (endConnection). */
export function turnAway(socket: AgentSocket, error: WsError): void {
  socket.emit('error', error);
  endConnection(socket, error.code);
}

/** Socket.IO's acknowledgement callback, when the client asked for one. */
export type Ack = (response: unknown) => void;

/**
 * The socket's fields of a log line. A held connection keeps no child logger of its own (one cost
 * 0.4 KB of heap per connection, bench/heap-per-connection.js): its lines name it with these.
 */
export function socketFields(socket: AgentSocket): { agentId: string | undefined; socketId: string } {
  return { agentId: (socket.data.principal as AgentSocket['data']['principal'] | undefined)?.agentId, socketId: socket.id };
}

/**
 * What a client may see of any thrown value, refusals included (they are AppErrors of the catalog in
 * src/errors.ts): toPublicError decides, the catalog gives the WebSocket code. Internal failures are
 * logged (with the socket's agent and id), never described.
 */
export function toWsError(err: unknown, logger: Logger, event: string, socket?: AgentSocket): WsError {
  const appError = toPublicError(err);
  if (appError.code === 'INTERNAL') {
    const e = err instanceof Error ? { name: err.name, message: err.message } : { message: String(err) };
    logger.error({ ...(socket && socketFields(socket)), err: e, event }, 'websocket event failed');
  } else if (appError.code === 'UNAVAILABLE') {
    logger.warn({ ...(socket && socketFields(socket)), event }, 'websocket event refused: dependency unavailable');
  }
  return { code: appError.wsCode, message: describe(appError) };
}

/** The ack error has no `details` key (docs/protocol.md's shape), so a validation message names the fields. */
function describe(err: AppError): string {
  if (err.details === undefined) return err.message;
  const fields = Object.entries(err.details).map(([field, problem]) => `${field} ${detailText(problem)}`);
  return `${err.message}: ${fields.join('; ')}`;
}

/** Into the acknowledgement when there is one, as an `error` event (with `requestId`) otherwise. */
export function reply(socket: AgentSocket, error: WsError, ack: Ack | undefined, requestId: string | undefined): void {
  if (ack) ack({ error: { code: error.code, message: error.message } });
  else socket.emit('error', requestId === undefined ? error : { ...error, requestId });
}

/** As an `error` event and, when the event carried one, into its acknowledgement too. */
export function refuse(socket: AgentSocket, error: WsError, ack: Ack | undefined, requestId: string | undefined): void {
  socket.emit('error', requestId === undefined ? error : { ...error, requestId });
  ack?.({ error: { code: error.code, message: error.message } });
}
