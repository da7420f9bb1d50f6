import { AppError } from '../errors.js';

/**
 * Classification of driver errors. Storage outages become 503 UNAVAILABLE; unique violations
 * are reported to the caller so the service can answer 409 with its own message.
 */

interface DriverError {
  code?: unknown;
  errno?: unknown;
}

const SQLITE_UNAVAILABLE = new Set([
  'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY',
  'SQLITE_PROTOCOL', 'SQLITE_NOMEM', 'SQLITE_CORRUPT', 'SQLITE_NOTADB',
]);
const NODE_NET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);

function codeOf(err: unknown): string {
  if (typeof err !== 'object' || err === null) return '';
  const code = (err as DriverError).code;
  return typeof code === 'string' ? code : '';
}

export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err);
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export function isForeignKeyViolation(err: unknown): boolean {
  const code = codeOf(err);
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

export function isStorageUnavailable(err: unknown): boolean {
  const code = codeOf(err);
  if (code === '') {
    const message = err instanceof Error ? err.message : '';
    // pg and the pool report a lost or refused connection with these messages and no code.
    return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|The database connection is not open/i.test(message);
  }
  if (SQLITE_UNAVAILABLE.has(code) || [...SQLITE_UNAVAILABLE].some((c) => code.startsWith(`${c}_`))) return true;
  if (NODE_NET_UNAVAILABLE.has(code)) return true;
  // PostgreSQL classes 08 (connection), 53 (insufficient resources), 57P (operator intervention:
  // admin shutdown, crash shutdown, cannot connect now), 58 (system error).
  return /^(08|53|57P|58)/.test(code);
}

/** Rethrows driver errors as AppErrors where they mean something to a client. */
export function classifyStorageError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  if (isStorageUnavailable(err)) return new AppError('UNAVAILABLE', 'Database unavailable');
  return err;
}
