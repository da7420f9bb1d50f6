/**
 * The one error every failure of the client library rejects with (docs/client.md, Errors).
 *
 * `code` is the WebSocket error code of the failure (`VALIDATION_ERROR`, `AUTH_FAILED`, `FORBIDDEN`,
 * `NOT_FOUND`, `ROOM_NOT_FOUND`, `CONFLICT`, `RATE_LIMIT_EXCEEDED`, `UNAVAILABLE`, `INTERNAL`), the
 * REST equivalent when the failure was an HTTP answer, or one of the client's own:
 * `NETWORK_ERROR` (the service could not be reached), `TIMEOUT`, `CLOSED` (`close()` was called),
 * `NOT_CONNECTED` (a WebSocket request while disconnected), `HANDLER_ERROR` (a listener threw).
 */
export class AmsError extends Error {
  override name = 'AmsError';
  /** The HTTP status, when the failure was an HTTP answer. */
  readonly status: number | undefined;
  readonly code: string;
  /**
   * For VALIDATION_ERROR over REST: field name -> what is wrong with it. For some CONFLICTs, the
   * conflict's facts, each a string: `assigneeId` (who holds a claimed task; absent when nobody),
   * `conflicts` (the leases in the way, as JSON text: `leaseConflicts(err)` parses it).
   */
  readonly details: Record<string, string> | undefined;

  constructor(code: string, message: string, options: { status?: number; details?: Record<string, string>; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status;
    this.details = options.details;
  }
}

/**
 * The WebSocket code of each HTTP error status, as the service's error catalog (src/errors.ts) maps
 * them; test/unit/client-errors.test.ts keeps the two in agreement.
 */
export const HTTP_STATUS_CODES: Readonly<Record<number, string>> = {
  400: 'VALIDATION_ERROR',
  401: 'AUTH_FAILED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'VALIDATION_ERROR',
  408: 'VALIDATION_ERROR',
  409: 'CONFLICT',
  413: 'VALIDATION_ERROR',
  415: 'VALIDATION_ERROR',
  429: 'RATE_LIMIT_EXCEEDED',
  431: 'VALIDATION_ERROR',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** The REST error body `{error, details?}` (docs/protocol.md, Errors) as an AmsError. */
export function fromHttpError(status: number, body: unknown): AmsError {
  const { error, details } = (typeof body === 'object' && body !== null ? body : {}) as { error?: unknown; details?: unknown };
  const message = typeof error === 'string' ? error : `HTTP ${status}`;
  // REST bodies carry no code; the one 404 with a code of its own says so in its message.
  let code = HTTP_STATUS_CODES[status] ?? (status >= 500 ? 'INTERNAL' : 'VALIDATION_ERROR');
  if (status === 404 && message === 'Room not found') code = 'ROOM_NOT_FOUND';
  // A conflict's facts may be ids, null or lists: strings stay, null goes, the rest as JSON text.
  const fields = typeof details === 'object' && details !== null
    ? Object.fromEntries(Object.entries(details as Record<string, unknown>).flatMap(([field, value]) =>
      value === null || value === undefined ? [] : [[field, typeof value === 'string' ? value : JSON.stringify(value)]]))
    : undefined;
  return new AmsError(code, message, { status, ...(fields ? { details: fields } : {}) });
}

/** Failures worth trying again unchanged: the service was unreachable, busy or restarting. */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof AmsError)) return false;
  if (err.code === 'NETWORK_ERROR' || err.code === 'TIMEOUT' || err.code === 'RATE_LIMIT_EXCEEDED' || err.code === 'UNAVAILABLE') return true;
  return err.status !== undefined && err.status >= 500;
}
