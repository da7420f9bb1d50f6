import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { AppError, type ErrorCode } from '../../errors.js';
import { classifyStorageError } from '../../store/errors.js';

/** One JSON error shape everywhere: `{error, details?}`; no stack traces, no 5xx internals. */
export function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  if (err.code === 'RATE_LIMITED') void reply.header('Retry-After', '60');
  const body: { error: string; details?: Record<string, string> } = { error: err.message };
  if (err.details !== undefined) body.details = err.details;
  return reply.status(err.status).type('application/json; charset=utf-8').send(body);
}

const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'Request body is larger than 1 MiB'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['BAD_REQUEST', 'Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['BAD_REQUEST', 'Malformed JSON body'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['BAD_REQUEST', 'Malformed JSON body'],
};

function toAppError(err: FastifyError): AppError {
  const classified = classifyStorageError(err);
  if (classified instanceof AppError) return classified;
  const known = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (known) return new AppError(known[0], known[1]);
  // A SyntaxError is the client's only when the body parser flagged it (a bug of ours is a 500).
  if (err instanceof SyntaxError && err.statusCode === 400) return new AppError('BAD_REQUEST', 'Malformed JSON body');
  // Any other 4xx Fastify raises is the client's doing; keep its status class with a plain message.
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return new AppError('BAD_REQUEST', 'Bad Request');
  }
  return new AppError('INTERNAL', 'Internal Server Error');
}

/**
 * Errors Fastify raises before routing (a path with invalid percent-encoding, FST_ERR_BAD_URL):
 * by default they answer in Fastify's own shape and echo the URL; here they get ours.
 */
export function frameworkErrorHandler(err: FastifyError, _request: unknown, reply: FastifyReply): void {
  const routerError: Record<string, string> = { FST_ERR_BAD_URL: 'Malformed URL', FST_ERR_MAX_PARAM_LENGTH: 'A path segment is too long' };
  const message = err.code ? routerError[err.code] : undefined;
  void sendError(reply, message !== undefined ? new AppError('BAD_REQUEST', message) : toAppError(err));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = toAppError(err);
    if (appError.status >= 500) {
      // What failed and where, without the stack or driver internals (house rule: no stack traces
      // in logs); the route pattern locates the failing code path.
      const cause = { type: err.name, code: typeof err.code === 'string' ? err.code : undefined, message: err.message };
      request.log.error({ error: cause, route: request.routeOptions.url }, 'request failed');
    }
    return sendError(reply, appError);
  });
  app.setNotFoundHandler((_request, reply) => sendError(reply, new AppError('NOT_FOUND', 'Not Found')));
}
