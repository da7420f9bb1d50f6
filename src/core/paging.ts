import { validationError } from '../errors.js';
import { parseId } from './validation.js';

/**
 * The paging parameters of every newest-first listing (room history, the social feed and channel
 * feeds; REST query strings and WebSocket payloads alike): pure parsing, no storage. Whether a
 * cursor names an item of the listing is the service's check.
 */

export interface PageLimits {
  default: number;
  max: number;
}

/** `limit`: absent or empty means the default; otherwise a whole number 1..max (number or digits). */
export function parsePageLimit(raw: unknown, limits: PageLimits): number {
  if (raw === undefined || raw === null || raw === '') return limits.default;
  const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > limits.max) {
    throw validationError({ limit: `must be a whole number from 1 to ${limits.max}` });
  }
  return value;
}

export interface PageCursor {
  /** The id (lowercase) of the last item of the previous page, exclusive; null for the first (newest) page. */
  before: string | null;
  /** The parameter it came from, to name it in an error. */
  field: 'before' | 'cursor';
}

/**
 * `cursor` and `before` mean the same; both may be given when they name the same id. Each given one
 * must be a UUID (checked first, `before` before `cursor`), then they are compared as ids (case-blind).
 */
export function parsePageCursor(query: { before?: unknown; cursor?: unknown }): PageCursor {
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
