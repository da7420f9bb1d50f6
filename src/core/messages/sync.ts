import { validationError } from '../../errors.js';

/**
 * Forward catch-up (docs/catch-up.md): the parameters of `?afterSeq=` (REST) and `room:sync`
 * (WebSocket). Pure parsing, no storage.
 */

const given = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

/**
 * A sequence number from a query string (digits) or a JSON payload (a number): a whole number >= 0.
 * Numbers past 2^53 cannot be a `seq` the service gave out, and are refused rather than rounded.
 */
export function parseSeq(raw: unknown, field: string): number {
  const value = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw validationError({ [field]: 'must be a whole number >= 0' });
  }
  return value;
}

/** Whether a history request asks for forward catch-up (`afterSeq` present and not empty). */
export const wantsAfterSeq = (query: { afterSeq?: unknown }): boolean => given(query.afterSeq);

/** `afterSeq` pages forward, `before`/`cursor` backward: one request cannot do both. */
export function parseAfterSeq(query: { afterSeq?: unknown; before?: unknown; cursor?: unknown }): number {
  if (!given(query.afterSeq)) throw validationError({ afterSeq: 'is required' });
  const afterSeq = parseSeq(query.afterSeq, 'afterSeq');
  if (given(query.before) || given(query.cursor)) {
    throw validationError({ afterSeq: 'cannot be combined with cursor or before' });
  }
  return afterSeq;
}
