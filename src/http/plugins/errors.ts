import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, toPublicError } from '../../errors.js';

/** The one JSON error body: `{error, details?}`; no stack traces, no 5xx internals. */
function errorBody(err: AppError): { error: string; details?: Record<string, unknown> } {
  return err.details === undefined ? { error: err.message } : { error: err.message, details: err.details };
}

export function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  if (err.code === 'RATE_LIMITED') void reply.header('Retry-After', '60');
  return reply.status(err.status).type('application/json; charset=utf-8').send(errorBody(err));
}

/** Logs what a 5xx hides from the client: what failed and where, without the stack or driver internals. */
function logServerError(request: FastifyRequest, err: FastifyError, publicError: AppError): void {
  if (publicError.status < 500) return;
  const cause = { type: err.name, code: typeof err.code === 'string' ? err.code : undefined, message: err.message };
  request.log.error({ error: cause, route: request.routeOptions.url }, 'request failed');
}

/**
 * Errors Fastify raises before routing (a path with invalid percent-encoding, FST_ERR_BAD_URL):
 * by default they answer in Fastify's own shape and echo the URL; here they get ours.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const publicError = toPublicError(err);
  logServerError(request, err, publicError);
  void sendError(reply, publicError);
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (headers over the limit, a
 * malformed request line, a client too slow to send its request): Fastify's default answers in its
 * own shape (`{error, message, statusCode}`); here they get ours, then the connection is closed.
 */
export function clientErrorHandler(this: FastifyInstance, err: ConnectionError, socket: Duplex): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const mapped = toPublicError(err);
  // Whatever breaks a connection before it is a request is the client's (never a storage outage).
  const publicError = mapped.status >= 500 ? new AppError('BAD_REQUEST', 'Bad Request') : mapped;
  this.log.trace({ error: { code: err.code, message: err.message } }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(errorBody(publicError));
    socket.write(
      `HTTP/1.1 ${publicError.status} ${STATUS_CODES[publicError.status] ?? ''}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const publicError = toPublicError(err);
    logServerError(request, err, publicError);
    return sendError(reply, publicError);
  });
  app.setNotFoundHandler((_request, reply) => sendError(reply, new AppError('NOT_FOUND', 'Not Found')));
}
