import { validationError } from '../../errors.js';
import { parseId } from '../validation.js';
import { HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX } from './messages.schema.js';

/**
 * The paging parameters of a history request (REST query strings and WebSocket payloads alike):
 * pure parsing, no storage. Whether a cursor names a message of the room is the service's check.
 */

/** `limit`: absent or empty means the default; otherwise a whole number 1..100 (number or digits). */
export function parseHistoryLimit(raw: unknown): number {
  if (raw === undefined || raw === null || raw === '') return HISTORY_LIMIT_DEFAULT;
  const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > HISTORY_LIMIT_MAX) {
    throw validationError({ limit: `must be a whole number from 1 to ${HISTORY_LIMIT_MAX}` });
  }
  return value;
}

export interface HistoryCursor {
  /** The message id (lowercase), exclusive; null for the first (newest) page. */
  before: string | null;
  /** The parameter it came from, to name it in an error. */
  field: 'before' | 'cursor';
}

/** `cursor` (REST) and `before` (REST and WebSocket) mean the same; both may be given when equal. */
export function parseHistoryCursor(query: { before?: unknown; cursor?: unknown }): HistoryCursor {
  const given = (v: unknown): boolean => v !== undefined && v !== null && v !== '';
  const hasBefore = given(query.before);
  const hasCursor = given(query.cursor);
  if (!hasBefore && !hasCursor) return { before: null, field: 'before' };
  if (hasBefore && hasCursor) {
    const before = parseId(query.before, 'before');
    if (parseId(query.cursor, 'cursor') !== before) throw validationError({ cursor: 'cursor and before must not differ' });
    return { before, field: 'before' };
  }
  return hasBefore ? { before: parseId(query.before, 'before'), field: 'before' } : { before: parseId(query.cursor, 'cursor'), field: 'cursor' };
}
