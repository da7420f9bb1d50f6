import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createJwtCodec, JWT_CLOCK_SKEW_SECONDS } from '../../src/core/auth/jwt.js';
import { AppError } from '../../src/errors.js';

const SECRET = 'unit-test-secret-unit-test-secret-0123';
const AGENT = '0190a5d0-1234-7abc-8def-0123456789ab';
const TTL = 300;

/** An HS256 JWT over a payload given as raw JSON text, so it can carry numbers JSON.stringify cannot (1e400). */
function signRaw(payloadJson: string, secret = SECRET): string {
  const input = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')}.${Buffer.from(payloadJson).toString('base64url')}`;
  return `${input}.${createHmac('sha256', Buffer.from(secret, 'utf8')).update(input).digest('base64url')}`;
}

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected the token to be refused');
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('the session JWT codec', () => {
  it('signs HS256 with agentId, role, iat and exp = iat + ttl, and verifies its own tokens', () => {
    const codec = createJwtCodec(SECRET, TTL);
    const { token, claims } = codec.sign({ agentId: AGENT, role: 'admin', tokenId: 't1' });
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
    expect(claims.exp - claims.iat).toBe(TTL);
    expect(codec.verify(token)).toEqual({ agentId: AGENT, role: 'admin', tokenId: 't1', exp: claims.exp });
  });

  it('refuses a token signed with another secret, with 401', () => {
    const token = createJwtCodec(`${SECRET}-other`, TTL).sign({ agentId: AGENT, role: 'agent' }).token;
    expect(refusal(() => createJwtCodec(SECRET, TTL).verify(token)).status).toBe(401);
  });

  it('accepts a lifetime up to the configured one plus the clock skew, and lowercases the agentId', () => {
    const codec = createJwtCodec(SECRET, TTL);
    const iat = nowSeconds();
    const exp = iat + TTL + JWT_CLOCK_SKEW_SECONDS;
    expect(codec.verify(signRaw(JSON.stringify({ agentId: AGENT.toUpperCase(), role: 'agent', iat, exp })))).toEqual({ agentId: AGENT, role: 'agent', exp });
  });

  it.each([
    ['an exp of 1e400 (Infinity once parsed)', (iat: number) => `{"agentId":"${AGENT}","role":"agent","iat":${iat},"exp":1e400}`],
    ['an exp of 9e15', (iat: number) => `{"agentId":"${AGENT}","role":"agent","iat":${iat},"exp":9e15}`],
    ['an exp one second past the lifetime and skew', (iat: number) => JSON.stringify({ agentId: AGENT, role: 'agent', iat, exp: iat + TTL + JWT_CLOCK_SKEW_SECONDS + 1 })],
    ['no iat', (iat: number) => JSON.stringify({ agentId: AGENT, role: 'agent', exp: iat + 60 })],
    ['an iat of -1e400 (-Infinity)', (iat: number) => `{"agentId":"${AGENT}","role":"agent","iat":-1e400,"exp":${iat + 60}}`],
    ['a non-numeric iat', (iat: number) => JSON.stringify({ agentId: AGENT, role: 'agent', iat: 'now', exp: iat + 60 })],
    ['an iat in the future beyond the skew', (iat: number) => JSON.stringify({ agentId: AGENT, role: 'agent', iat: iat + 3600, exp: iat + 3600 + TTL })],
    ['a non-UUID agentId', (iat: number) => JSON.stringify({ agentId: 'a1', role: 'agent', iat, exp: iat + 60 })],
    ['a numeric agentId', (iat: number) => JSON.stringify({ agentId: 42, role: 'agent', iat, exp: iat + 60 })],
  ])('refuses a correctly signed token with %s, with 401', (_case, payload) => {
    const error = refusal(() => createJwtCodec(SECRET, TTL).verify(signRaw(payload(nowSeconds()))));
    expect(error.status).toBe(401);
    expect(error.message).toBe('Invalid or expired token');
  });
});
