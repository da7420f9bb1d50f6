import { describe, expect, it } from 'vitest';
import { parseHistoryCursor, parseHistoryLimit } from '../../src/core/messages/history-query.js';
import { AppError } from '../../src/errors.js';

const ID = '0190a5d0-1234-7abc-8def-0123456789ab';
const OTHER = '0190a5d0-1234-7abc-8def-0123456789ac';

function detailsOf(fn: () => unknown): Record<string, string> | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    return (err as AppError).details;
  }
  throw new Error('expected a validation error');
}

describe('parseHistoryLimit', () => {
  it('defaults to 50 when absent or empty', () => {
    for (const raw of [undefined, null, '']) expect(parseHistoryLimit(raw)).toBe(50);
  });

  it('accepts whole numbers 1..100 as numbers or digit strings', () => {
    expect(parseHistoryLimit(1)).toBe(1);
    expect(parseHistoryLimit('1')).toBe(1);
    expect(parseHistoryLimit(100)).toBe(100);
    expect(parseHistoryLimit('100')).toBe(100);
    expect(parseHistoryLimit('007')).toBe(7);
  });

  it.each([0, 101, -1, 1.5, '0', '101', 'abc', '1.5', '-1', '1e2', ' 5', '0x10', Number.NaN, Infinity, true, [5], { n: 5 }])(
    'refuses %j with details.limit',
    (raw) => {
      expect(detailsOf(() => parseHistoryLimit(raw))).toEqual({ limit: 'must be a whole number from 1 to 100' });
    },
  );
});

describe('parseHistoryCursor', () => {
  it('no cursor: the newest page', () => {
    expect(parseHistoryCursor({}).before).toBeNull();
    expect(parseHistoryCursor({ before: '', cursor: null }).before).toBeNull();
  });

  it('cursor and before mean the same exclusive position, lowercased', () => {
    expect(parseHistoryCursor({ cursor: ID })).toEqual({ before: ID, field: 'cursor' });
    expect(parseHistoryCursor({ before: ID.toUpperCase() })).toEqual({ before: ID, field: 'before' });
    expect(parseHistoryCursor({ before: ID, cursor: ID.toUpperCase() }).before).toBe(ID);
  });

  it('refuses differing cursor and before, and non-UUIDs, naming the parameter', () => {
    expect(detailsOf(() => parseHistoryCursor({ before: ID, cursor: OTHER }))).toEqual({ cursor: 'cursor and before must not differ' });
    expect(detailsOf(() => parseHistoryCursor({ cursor: 'yesterday' }))).toEqual({ cursor: 'must be a UUID' });
    expect(detailsOf(() => parseHistoryCursor({ before: 42 }))).toEqual({ before: 'must be a UUID' });
    expect(detailsOf(() => parseHistoryCursor({ before: [ID, ID] }))).toEqual({ before: 'must be a UUID' });
    expect(detailsOf(() => parseHistoryCursor({ before: `${ID}0` }))).toEqual({ before: 'must be a UUID' });
  });
});
