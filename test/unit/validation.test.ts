import { describe, expect, it } from 'vitest';
import { codePointLength, compile, isUuid, parseId, parseTimestamp, requireObject, Text, Type } from '../../src/core/validation.js';
import { AppError } from '../../src/errors.js';

function detailsOf(fn: () => unknown): Record<string, string> | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('VALIDATION_ERROR');
    return (err as AppError).details as Record<string, string> | undefined;
  }
  throw new Error('expected a validation error');
}

describe('codePointLength', () => {
  it('counts code points, not UTF-16 units', () => {
    expect(codePointLength('')).toBe(0);
    expect(codePointLength('abc')).toBe(3);
    expect(codePointLength('🙂')).toBe(1);
    expect('🙂'.length).toBe(2);
    expect(codePointLength('é🙂x')).toBe(3);
    // A family emoji is several code points joined: each one counts.
    expect(codePointLength('👨‍👩‍👧')).toBe(5);
  });
});

describe('the Text kind', () => {
  const body = compile(Type.Object({ body: Text({ minLength: 1, maxLength: 4 }) }));
  const named = compile(Type.Object({ name: Text({ pattern: '^[a-z]+$' }) }));

  it('accepts strings within the bounds counted in code points', () => {
    expect(body.parse({ body: 'a' })).toEqual({ body: 'a' });
    expect(body.parse({ body: '🙂🙂🙂🙂' })).toEqual({ body: '🙂🙂🙂🙂' }); // 8 UTF-16 units, 4 code points
    expect(body.parse({ body: '\uD83D\uDE42' })).toEqual({ body: '🙂' }); // a paired surrogate is fine
  });

  it('refuses lengths outside the bounds with readable messages', () => {
    expect(detailsOf(() => body.parse({ body: '' }))).toEqual({ body: 'must not be empty' });
    expect(detailsOf(() => body.parse({ body: '🙂🙂🙂🙂🙂' }))).toEqual({ body: 'must be at most 4 characters' });
    const two = compile(Type.Object({ t: Text({ minLength: 2 }) }));
    expect(detailsOf(() => two.parse({ t: 'a' }))).toEqual({ t: 'must be at least 2 characters' });
    // Two UTF-16 units, one code point: too short all the same.
    expect(detailsOf(() => two.parse({ t: '🙂' }))).toEqual({ t: 'must be at least 2 characters' });
    expect(two.parse({ t: '🙂🙂' })).toEqual({ t: '🙂🙂' });
  });

  it('refuses NUL anywhere', () => {
    for (const value of ['\u0000', 'a\u0000', '\u0000b', 'a\u0000b']) {
      expect(detailsOf(() => body.parse({ body: value }))).toEqual({ body: 'must not contain NUL characters' });
    }
  });

  it('refuses unpaired surrogates (high alone, low alone, reversed pair)', () => {
    for (const value of ['\uD800', 'a\uD83D', '\uDE42b', '\uDE42\uD83D']) {
      expect(detailsOf(() => body.parse({ body: value }))).toEqual({ body: 'must be valid Unicode (no unpaired surrogates)' });
    }
  });

  it('refuses non-strings and missing values', () => {
    for (const value of [1, null, true, ['a'], { a: 1 }]) expect(detailsOf(() => body.parse({ body: value }))).toEqual({ body: 'must be a string' });
    expect(detailsOf(() => body.parse({}))).toEqual({ body: 'is required' });
  });

  it('names the pattern when it does not match, tested on code points', () => {
    expect(detailsOf(() => named.parse({ name: 'ABC' }))).toEqual({ name: 'must match pattern ^[a-z]+$' });
    const emoji = compile(Type.Object({ e: Text({ pattern: '^.$' }) }));
    expect(emoji.parse({ e: '🙂' })).toEqual({ e: '🙂' });
  });
});

describe('compile: details keyed by field', () => {
  const schema = compile(
    Type.Object({
      role: Type.Union([Type.Literal('admin'), Type.Literal('agent')]),
      members: Type.Optional(Type.Array(Text({ minLength: 1 }), { maxItems: 2 })),
      count: Type.Optional(Type.Integer({ minimum: 1, maximum: 3 })),
    }),
  );

  it('one message per field of the request, a bad array item under its field with the item named', () => {
    expect(detailsOf(() => schema.parse({ role: 'root', members: ['a', ''], count: 9 }))).toEqual({
      role: 'must be one of "admin", "agent"',
      members: 'members[1]: must not be empty',
      count: 'must be at most 3',
    });
    expect(detailsOf(() => schema.parse({ role: 'admin', members: ['a', 'b', 'c'] }))).toEqual({ members: 'must have at most 2 items' });
    expect(detailsOf(() => schema.parse({ role: 'admin', count: 1.5 }))).toEqual({ count: 'must be a whole number' });
    expect(detailsOf(() => schema.parse({ role: 'admin', members: 'a' }))).toEqual({ members: 'must be an array' });
  });

  it('returns the value when valid', () => {
    expect(schema.parse({ role: 'agent', members: ['x'] })).toEqual({ role: 'agent', members: ['x'] });
  });
});

describe('requireObject', () => {
  it('accepts plain objects only', () => {
    expect(requireObject({ a: 1 })).toEqual({ a: 1 });
    for (const value of [null, undefined, [], 'x', 1]) expect(detailsOf(() => requireObject(value))).toEqual({ body: 'must be a JSON object' });
  });
});

describe('ids and timestamps', () => {
  it('parseId validates and lowercases UUIDs, naming the field otherwise', () => {
    expect(parseId('0190A5D0-1234-7ABC-8DEF-0123456789AB', 'id')).toBe('0190a5d0-1234-7abc-8def-0123456789ab');
    for (const value of ['', 'x', '0190a5d0-1234-7abc-8def-0123456789a', '0190a5d012347abc8def0123456789ab', 42, null]) {
      expect(detailsOf(() => parseId(value, 'roomId'))).toEqual({ roomId: 'must be a UUID' });
    }
    expect(isUuid('0190a5d0-1234-7abc-8def-0123456789ab')).toBe(true);
  });

  it('parseTimestamp accepts ISO 8601 date-times with a zone only', () => {
    expect(parseTimestamp('2026-11-21T10:47:00.000Z')?.toISOString()).toBe('2026-11-21T10:47:00.000Z');
    expect(parseTimestamp('2026-11-21T10:47Z')?.toISOString()).toBe('2026-11-21T10:47:00.000Z');
    expect(parseTimestamp('2026-11-21T12:47:00+02:00')?.toISOString()).toBe('2026-11-21T10:47:00.000Z');
    for (const value of ['2026-11-21', '2026-11-21T10:47:00', 'tomorrow', '2026-13-01T00:00:00Z', '2026-11-21 10:47:00Z', '']) {
      expect(parseTimestamp(value), value).toBeNull();
    }
  });
});
