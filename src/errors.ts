/**
 * The closed catalog of errors the service can give. Every error has a stable code; this one table
 * maps it to an HTTP status and to a WebSocket error code. Messages of 5xx errors never leave the
 * process (see toPublicError).
 */
export const ERROR_CATALOG = {
  VALIDATION_ERROR: { status: 400, ws: 'VALIDATION_ERROR' },
  BAD_REQUEST: { status: 400, ws: 'VALIDATION_ERROR' },
  UNAUTHENTICATED: { status: 401, ws: 'AUTH_FAILED' },
  FORBIDDEN: { status: 403, ws: 'FORBIDDEN' },
  NOT_FOUND: { status: 404, ws: 'NOT_FOUND' },
  ROOM_NOT_FOUND: { status: 404, ws: 'ROOM_NOT_FOUND' },
  CONFLICT: { status: 409, ws: 'CONFLICT' },
  PAYLOAD_TOO_LARGE: { status: 413, ws: 'VALIDATION_ERROR' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, ws: 'VALIDATION_ERROR' },
  RATE_LIMITED: { status: 429, ws: 'RATE_LIMIT_EXCEEDED' },
  UNAVAILABLE: { status: 503, ws: 'UNAVAILABLE' },
  INTERNAL: { status: 500, ws: 'INTERNAL' },
} as const;

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
}

export const validationError = (details: ErrorDetails, message = 'Validation failed'): AppError =>
  new AppError('VALIDATION_ERROR', message, details);
export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} not found`);
export const roomNotFound = (): AppError => new AppError('ROOM_NOT_FOUND', 'Room not found');
export const unauthenticated = (message = 'Authentication required'): AppError =>
  new AppError('UNAUTHENTICATED', message);
export const forbidden = (message = 'Forbidden'): AppError => new AppError('FORBIDDEN', message);
export const conflict = (message: string): AppError => new AppError('CONFLICT', message);
export const unavailable = (message = 'Service temporarily unavailable'): AppError =>
  new AppError('UNAVAILABLE', message);

/**
 * What a client may see of any thrown value: AppErrors as they are, everything else as a bare
 * 500 (or 503 for storage outages, classified by the store) with no internal detail.
 */
export function toPublicError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  return new AppError('INTERNAL', 'Internal Server Error');
}
