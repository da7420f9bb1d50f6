import { describe, expect, it } from 'vitest';
import { parsePageCursor, parsePageLimit } from '../../src/core/paging.js';
import { AppError } from '../../src/errors.js';

const ID = '0190a5d0-1234-7abc-8def-0123456789ab';
const OTHER = '0190a5d0-1234-7abc-8def-0123456789ac';
const LIMITS = { default: 50, max: 100 };

function detailsOf(fn: () => unknown): Record<string, string> | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    return (err as AppError).details as Record<string, string> | undefined;
  }
  throw new Error('expected a validation error');
}

describe('parsePageLimit', () => {
  it('defaults to 50 when absent or empty', () => {
    for (const raw of [undefined, null, '']) expect(parsePageLimit(raw, LIMITS)).toBe(50);
  });

  it('accepts whole numbers 1..100 as numbers or digit strings', () => {
    expect(parsePageLimit(1, LIMITS)).toBe(1);
    expect(parsePageLimit('1', LIMITS)).toBe(1);
    expect(parsePageLimit(100, LIMITS)).toBe(100);
    expect(parsePageLimit('100', LIMITS)).toBe(100);
    expect(parsePageLimit('007', LIMITS)).toBe(7);
  });

  it.each([0, 101, -1, 1.5, '0', '101', 'abc', '1.5', '-1', '1e2', ' 5', '0x10', Number.NaN, Infinity, true, [5], { n: 5 }])(
    'refuses %j with details.limit',
    (raw) => {
      expect(detailsOf(() => parsePageLimit(raw, LIMITS))).toEqual({ limit: 'must be a whole number from 1 to 100' });
    },
  );
});

describe('parsePageCursor', () => {
  it('no cursor: the newest page', () => {
    expect(parsePageCursor({}).before).toBeNull();
    expect(parsePageCursor({ before: '', cursor: null }).before).toBeNull();
  });

  it('cursor and before mean the same exclusive position, lowercased', () => {
    expect(parsePageCursor({ cursor: ID })).toEqual({ before: ID, field: 'cursor' });
    expect(parsePageCursor({ before: ID.toUpperCase() })).toEqual({ before: ID, field: 'before' });
    expect(parsePageCursor({ before: ID, cursor: ID.toUpperCase() }).before).toBe(ID);
  });

  it('refuses differing cursor and before, and non-UUIDs, naming the parameter', () => {
    expect(detailsOf(() => parsePageCursor({ before: ID, cursor: OTHER }))).toEqual({ cursor: 'cursor and before must not differ' });
    expect(detailsOf(() => parsePageCursor({ cursor: 'yesterday' }))).toEqual({ cursor: 'must be a UUID' });
    expect(detailsOf(() => parsePageCursor({ before: 42 }))).toEqual({ before: 'must be a UUID' });
    expect(detailsOf(() => parsePageCursor({ before: [ID, ID] }))).toEqual({ before: 'must be a UUID' });
    expect(detailsOf(() => parsePageCursor({ before: `${ID}0` }))).toEqual({ before: 'must be a UUID' });
  });

  it('checks each given parameter is a UUID before comparing them (one semantics for history and feeds)', () => {
    expect(detailsOf(() => parsePageCursor({ before: 'abc', cursor: 'xyz' }))).toEqual({ before: 'must be a UUID' });
    expect(detailsOf(() => parsePageCursor({ before: ID, cursor: 'ABC' }))).toEqual({ cursor: 'must be a UUID' });
    // Equal as strings but not UUIDs: still refused.
    expect(detailsOf(() => parsePageCursor({ before: 'same', cursor: 'same' }))).toEqual({ before: 'must be a UUID' });
  });
});
