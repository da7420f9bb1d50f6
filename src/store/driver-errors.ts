/**
 * What a driver error means, from its code alone: no imports, so src/errors.ts (which turns these
 * into public errors) and the store can both use it. A storage outage is a 503 for the client;
 * a unique violation is reported to the caller so the service can answer 409 with its own message;
 * a value the engine refuses (which validation should have caught first) is the client's mistake.
 */

interface DriverError {
  code?: unknown;
  errno?: unknown;
  errors?: unknown;
}

const SQLITE_UNAVAILABLE = new Set([
  'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY',
  'SQLITE_PROTOCOL', 'SQLITE_NOMEM', 'SQLITE_CORRUPT', 'SQLITE_NOTADB',
]);
const NODE_NET_UNAVAILABLE = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
]);
/**
 * PostgreSQL SQLSTATEs that mean "not now" rather than "never": 57014 statement timeout or cancel,
 * 55P03 lock not available, 40001 serialization failure, 40P01 deadlock.
 */
const PG_TRANSIENT = new Set(['57014', '55P03', '40001', '40P01']);
/**
 * PostgreSQL refusing a value SQLite would store or simply not match: 22P02 malformed uuid/number,
 * 22021 NUL byte in text, 22P05 \u0000 in jsonb, 22003 number out of range, 22007/22008 bad or
 * out-of-range date (year 0), 22001 value too long.
 */
const PG_INVALID_VALUE = new Set(['22P02', '22021', '22P05', '22003', '22007', '22008', '22001']);
/** pg, pg-pool and Kysely report a lost, refused or timed-out connection with these messages and no code. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|timeout expired|not queryable|Client was closed|Cannot use a pool after calling end|The database connection is not open|driver has already been destroyed/i;

function codeOf(err: unknown): string {
  if (typeof err !== 'object' || err === null) return '';
  const code = (err as DriverError).code;
  return typeof code === 'string' ? code : '';
}

/** Node's happy-eyeballs connect reports an AggregateError whose inner errors carry the codes. */
function innerErrors(err: unknown): unknown[] {
  if (typeof err !== 'object' || err === null) return [];
  const inner = (err as DriverError).errors;
  return Array.isArray(inner) ? inner : [];
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
    if (innerErrors(err).some(isStorageUnavailable)) return true;
    const message = err instanceof Error ? err.message : '';
    return UNAVAILABLE_MESSAGE.test(message);
  }
  if (SQLITE_UNAVAILABLE.has(code) || [...SQLITE_UNAVAILABLE].some((c) => code.startsWith(`${c}_`))) return true;
  if (NODE_NET_UNAVAILABLE.has(code) || PG_TRANSIENT.has(code)) return true;
  // PostgreSQL classes 08 (connection), 53 (insufficient resources), 57P (operator intervention:
  // admin shutdown, crash shutdown, cannot connect now), 58 (system error).
  return /^(08|53|57P|58)/.test(code);
}

/**
 * The engine refused a value: a CHECK constraint (both engines, e.g. the reaction emoji), or a
 * value only PostgreSQL is strict about (SQLite stores or compares anything).
 */
export function isInvalidValue(err: unknown): boolean {
  const code = codeOf(err);
  return PG_INVALID_VALUE.has(code) || code === '23514' || code === 'SQLITE_CONSTRAINT_CHECK';
}
