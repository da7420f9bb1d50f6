import type { WsErrorCode as WireErrorCode } from '@agent-messaging/protocol';
import { isInvalidValue, isStorageUnavailable } from './store/driver-errors.js';

/** JSON-RPC's codes for an MCP request refused as a whole (a resource read): the params, the request, or ours. */
const INVALID_PARAMS = -32602;
const INVALID_REQUEST = -32600;
const INTERNAL_ERROR = -32603;

/**
 * The closed catalog of errors the service can give. Every error has a stable code; this one table
 * maps it to what each interface says:
 * - `status`: the HTTP status (REST; MCP and A2A over HTTP answer 200 with the error inside);
 * - `ws`: the WebSocket error code;
 * - `jsonRpc`: the JSON-RPC error code of an MCP request refused as a whole (tool calls answer an
 *   `isError` result whose text starts with the catalog's code, whatever the error);
 * - `a2a`: the A2A protocol error (a2a/request-handler.ts builds it): `invalid-params`,
 *   `task-not-found`, `conflict` (not cancelable for a cancel, unsupported otherwise), `unsupported`,
 *   `coded` (an internal error whose text is the catalog's code and message, so a caller knows to
 *   retry) or `internal` (nothing of the cause).
 * Messages of 5xx errors never leave the process (see toPublicError).
 */
export const ERROR_CATALOG = {
  VALIDATION_ERROR: { status: 400, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_PARAMS, a2a: 'invalid-params' },
  BAD_REQUEST: { status: 400, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_PARAMS, a2a: 'invalid-params' },
  UNAUTHENTICATED: { status: 401, ws: 'AUTH_FAILED', jsonRpc: INVALID_REQUEST, a2a: 'coded' },
  FORBIDDEN: { status: 403, ws: 'FORBIDDEN', jsonRpc: INVALID_REQUEST, a2a: 'unsupported' },
  NOT_FOUND: { status: 404, ws: 'NOT_FOUND', jsonRpc: INVALID_REQUEST, a2a: 'task-not-found' },
  ROOM_NOT_FOUND: { status: 404, ws: 'ROOM_NOT_FOUND', jsonRpc: INVALID_REQUEST, a2a: 'task-not-found' },
  METHOD_NOT_ALLOWED: { status: 405, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_REQUEST, a2a: 'unsupported' },
  CONFLICT: { status: 409, ws: 'CONFLICT', jsonRpc: INVALID_REQUEST, a2a: 'conflict' },
  REQUEST_TIMEOUT: { status: 408, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_REQUEST, a2a: 'coded' },
  PAYLOAD_TOO_LARGE: { status: 413, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_REQUEST, a2a: 'invalid-params' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_REQUEST, a2a: 'invalid-params' },
  HEADERS_TOO_LARGE: { status: 431, ws: 'VALIDATION_ERROR', jsonRpc: INVALID_REQUEST, a2a: 'invalid-params' },
  RATE_LIMITED: { status: 429, ws: 'RATE_LIMIT_EXCEEDED', jsonRpc: INVALID_REQUEST, a2a: 'coded' },
  UNAVAILABLE: { status: 503, ws: 'UNAVAILABLE', jsonRpc: INTERNAL_ERROR, a2a: 'coded' },
  INTERNAL: { status: 500, ws: 'INTERNAL', jsonRpc: INTERNAL_ERROR, a2a: 'internal' },
} as const satisfies Record<string, { status: number; ws: WireErrorCode; jsonRpc: number; a2a: A2aErrorKind }>;

/** The kinds of A2A error the catalog's `a2a` column names. */
export type A2aErrorKind = 'invalid-params' | 'task-not-found' | 'conflict' | 'unsupported' | 'coded' | 'internal';

export type ErrorCode = keyof typeof ERROR_CATALOG;
export type WsErrorCode = (typeof ERROR_CATALOG)[ErrorCode]['ws'];

/** Field name -> human-readable message. */
export type ErrorDetails = Record<string, string>;

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
  ) {
    super(message);
  }

  get status(): number {
    return ERROR_CATALOG[this.code].status;
  }

  get wsCode(): WsErrorCode {
    return ERROR_CATALOG[this.code].ws;
  }

  get jsonRpcCode(): number {
    return ERROR_CATALOG[this.code].jsonRpc;
  }

  get a2aKind(): A2aErrorKind {
    return ERROR_CATALOG[this.code].a2a;
  }
}

export const validationError = (details: ErrorDetails, message = 'Validation failed'): AppError =>
  new AppError('VALIDATION_ERROR', message, details);
export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} not found`);
/** Agents named (by id or name) that do not exist: NOT_FOUND naming them, wherever an agent is named. */
export const agentsNotFound = (refs: readonly string[]): AppError =>
  new AppError('NOT_FOUND', `Agent${refs.length > 1 ? 's' : ''} not found: ${[...new Set(refs)].join(', ')}`);
export const roomNotFound = (): AppError => new AppError('ROOM_NOT_FOUND', 'Room not found');
export const unauthenticated = (message = 'Authentication required'): AppError =>
  new AppError('UNAUTHENTICATED', message);
export const forbidden = (message = 'Forbidden'): AppError => new AppError('FORBIDDEN', message);
export const conflict = (message: string): AppError => new AppError('CONFLICT', message);
export const unavailable = (message = 'Service temporarily unavailable'): AppError =>
  new AppError('UNAVAILABLE', message);

/**
 * Errors the HTTP layer (Fastify, its router and body parser, Node's HTTP parser) raises for a
 * client's mistake, by their `code`. Recognised by code so this module needs no Fastify import.
 */
const FRAMEWORK_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'Request body is larger than this endpoint accepts'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['BAD_REQUEST', 'Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['BAD_REQUEST', 'Malformed JSON body'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['BAD_REQUEST', 'Malformed JSON body'],
  FST_ERR_BAD_URL: ['BAD_REQUEST', 'Malformed URL'],
  FST_ERR_MAX_PARAM_LENGTH: ['BAD_REQUEST', 'A path segment is too long'],
  HPE_HEADER_OVERFLOW: ['HEADERS_TOO_LARGE', 'Request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: ['REQUEST_TIMEOUT', 'Request Timeout'],
};

interface CodedError {
  code?: unknown;
  statusCode?: unknown;
}

/**
 * Driver errors as AppErrors where they mean something to a client (see toPublicError, which does
 * the mapping); any other error is returned as it is.
 */
export function classifyStorageError(err: unknown): unknown {
  return err instanceof AppError || isStorageUnavailable(err) || isInvalidValue(err) ? toPublicError(err) : err;
}

/**
 * The one mapping from any thrown value to what a client may see, for REST and WebSocket alike:
 * AppErrors as they are; storage outages as 503 and a value the engine refuses as 400 (see
 * store/driver-errors.ts); the HTTP layer's client errors as their catalog entry; anything else
 * a bare 500 with no internal detail (the caller logs the cause).
 */
export function toPublicError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isStorageUnavailable(err)) return new AppError('UNAVAILABLE', 'Database unavailable');
  if (isInvalidValue(err)) return new AppError('BAD_REQUEST', 'A value in the request is not valid');
  const { code, statusCode } = typeof err === 'object' && err !== null ? (err as CodedError) : {};
  const known = typeof code === 'string' ? FRAMEWORK_CODES[code] : undefined;
  if (known) return new AppError(known[0], known[1]);
  // Node's HTTP parser refusing the request line or a header.
  if (typeof code === 'string' && code.startsWith('HPE_')) return new AppError('BAD_REQUEST', 'Bad Request');
  // A SyntaxError is the client's only when the body parser flagged it (a bug of ours is a 500).
  if (err instanceof SyntaxError && statusCode === 400) return new AppError('BAD_REQUEST', 'Malformed JSON body');
  // Any other 4xx the framework raises is the client's doing; keep its status class with a plain message.
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return new AppError('BAD_REQUEST', 'Bad Request');
  }
  return new AppError('INTERNAL', 'Internal Server Error');
}
