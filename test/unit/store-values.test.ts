import { afterEach, describe, expect, it, vi } from 'vitest';
import { nowIso, toIso } from '../../src/store/values.js';

describe('nowIso', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const at = (ms: number): string => {
    vi.spyOn(Date, 'now').mockReturnValue(ms);
    return nowIso();
  };

  it('is what Date#toISOString returns, at every millisecond of a second and across seconds', () => {
    const second = Date.UTC(2026, 10, 26, 8, 59, 59);
    for (let ms = second - 3; ms < second + 1003; ms++) expect(at(ms)).toBe(new Date(ms).toISOString());
  });

  it('stays right when time jumps, forwards and back, and within one millisecond', () => {
    const times = [0, 9, 10, 99, 100, 999, 1000, Date.UTC(1999, 11, 31, 23, 59, 59, 999), Date.UTC(2000, 0, 1), Date.UTC(2024, 1, 29, 12, 0, 0, 7), 5, 5, Date.UTC(2038, 0, 19, 3, 14, 8, 1)];
    for (const ms of times) expect(at(ms)).toBe(new Date(ms).toISOString());
  });

  it('agrees with the real clock', () => {
    const before = Date.now();
    const iso = nowIso();
    const after = Date.now();
    expect(iso).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(iso)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(iso)).toBeLessThanOrEqual(after);
  });
});

describe('toIso', () => {
  it('returns the canonical form as is and normalises any other', () => {
    expect(toIso('2026-11-26T08:59:59.123Z')).toBe('2026-11-26T08:59:59.123Z');
    expect(toIso('2026-11-26T09:59:59.123+01:00')).toBe('2026-11-26T08:59:59.123Z');
    expect(toIso(new Date(Date.UTC(2026, 10, 26)))).toBe('2026-11-26T00:00:00.000Z');
  });
});
