import { validationError } from '../../errors.js';
import { parseSeq } from '../validation.js';

/**
 * Forward catch-up (docs/catch-up.md): the parameters of `?afterSeq=` (REST) and `room:sync`
 * (WebSocket). Pure parsing, no storage.
 */

const given = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

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
