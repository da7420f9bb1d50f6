import { describe, expect, it } from 'vitest';
import { createJwtCodec } from '../../src/core/auth/jwt.js';
import { AppError } from '../../src/errors.js';

const SECRET = 'unit-test-secret-unit-test-secret-0123';

describe('the session JWT codec', () => {
  it('signs HS256 with agentId, role, iat and exp = iat + ttl, and verifies its own tokens', () => {
    const codec = createJwtCodec(SECRET, 300);
    const { token, claims } = codec.sign({ agentId: 'a1', role: 'admin', tokenId: 't1' });
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
    expect(claims.exp - claims.iat).toBe(300);
    expect(codec.verify(token)).toEqual({ agentId: 'a1', role: 'admin', tokenId: 't1', exp: claims.exp });
  });

  it('refuses a token signed with another secret, with 401', () => {
    const token = createJwtCodec(`${SECRET}-other`, 300).sign({ agentId: 'a1', role: 'agent' }).token;
    let error: unknown;
    try {
      createJwtCodec(SECRET, 300).verify(token);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(401);
  });
});
