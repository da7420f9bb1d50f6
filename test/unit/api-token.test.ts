import { describe, expect, it } from 'vitest';
import { generateApiToken, isTokenPrefix, looksLikeApiToken, parseApiToken } from '../../src/core/auth/api-token.js';

describe('API token format agt_<prefix>_<secret>', () => {
  it('generates a 12-hex-digit prefix and a 256-bit secret, joined as the token', () => {
    const { token, prefix, secret } = generateApiToken();
    expect(token).toMatch(/^agt_[0-9a-f]{12}_[0-9a-f]{64}$/);
    expect(prefix).toMatch(/^agt_[0-9a-f]{12}$/);
    expect(secret).toMatch(/^[0-9a-f]{64}$/); // 32 random bytes: well above 128 bits
    expect(token).toBe(`${prefix}_${secret}`);
  });

  it('draws prefixes and secrets at random', () => {
    const tokens = Array.from({ length: 200 }, () => generateApiToken());
    expect(new Set(tokens.map((t) => t.prefix)).size).toBe(200);
    expect(new Set(tokens.map((t) => t.secret)).size).toBe(200);
    // Every hex digit shows up in the secrets (a constant or narrow source would not).
    expect(new Set(tokens.map((t) => t.secret).join('')).size).toBe(16);
  });

  it('parses its own tokens back into prefix and secret', () => {
    const generated = generateApiToken();
    expect(parseApiToken(generated.token)).toEqual({ prefix: generated.prefix, secret: generated.secret });
  });

  it.each([
    ['empty', ''],
    ['no agt_ scheme', `xyz_${'a'.repeat(12)}_${'b'.repeat(64)}`],
    ['upper-case hex', `agt_${'A'.repeat(12)}_${'b'.repeat(64)}`],
    ['short prefix', `agt_${'a'.repeat(11)}_${'b'.repeat(64)}`],
    ['long prefix', `agt_${'a'.repeat(13)}_${'b'.repeat(64)}`],
    ['short secret', `agt_${'a'.repeat(12)}_${'b'.repeat(63)}`],
    ['long secret', `agt_${'a'.repeat(12)}_${'b'.repeat(65)}`],
    ['non-hex secret', `agt_${'a'.repeat(12)}_${'g'.repeat(64)}`],
    ['prefix only', `agt_${'a'.repeat(12)}`],
    ['extra segment', `agt_${'a'.repeat(12)}_${'b'.repeat(64)}_c`],
    ['surrounding space', ` agt_${'a'.repeat(12)}_${'b'.repeat(64)}`],
    ['trailing newline', `agt_${'a'.repeat(12)}_${'b'.repeat(64)}\n`],
  ])('refuses a malformed token (%s)', (_case, token) => {
    expect(parseApiToken(token)).toBeNull();
  });

  it('recognises prefixes and token-like values', () => {
    expect(isTokenPrefix(generateApiToken().prefix)).toBe(true);
    expect(isTokenPrefix(generateApiToken().token)).toBe(false);
    expect(isTokenPrefix('agt_xyz')).toBe(false);
    expect(looksLikeApiToken('agt_anything')).toBe(true);
    expect(looksLikeApiToken('eyJhbGciOiJIUzI1NiJ9.e30.x')).toBe(false);
  });
});
