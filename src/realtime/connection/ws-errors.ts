import type { Logger } from 'pino';
import { toPublicError, type AppError } from '../../errors.js';
import type { AgentSocket, WsError } from '../protocol.js';

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
  const fields = Object.entries(err.details).map(([field, problem]) => `${field} ${problem}`);
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
