import { createSigner, createVerifier } from 'fast-jwt';
import { unauthenticated } from '../../errors.js';
import { ROLES, type Principal, type Role } from '../principal.js';
import { isUuid } from '../validation.js';
import { parseScopeClaim } from './scopes.js';

export interface SessionClaims {
  agentId: string;
  role: Role;
  iat: number;
  exp: number;
  /** Id of the API token the session was exchanged for. */
  tid?: string;
  /** A scoped token's `actions` and `rooms`, as issued (docs/scopes.md). */
  scp?: { actions?: unknown[]; rooms?: unknown[] };
}

export interface JwtCodec {
  /** Signs a session JWT; `exp` is `now + ttl` in seconds. */
  sign(principal: { agentId: string; role: Role; tokenId?: string; scope?: SessionClaims['scp'] }): { token: string; claims: SessionClaims };
  /**
   * Verifies signature (HS256 only), `exp` and `iat` (required, finite, at most the session lifetime
   * apart, `iat` not in the future) and claim shapes (`agentId` a UUID, returned lowercase; `scp`,
   * when present, well formed: it becomes `scope`); throws
   * 401 otherwise. Whether the agent exists is SessionAuth's check.
   */
  verify(token: string): Principal & { exp: number };
}

/** Clock difference tolerated between nodes: an `iat` this far ahead, a lifetime this much longer. */
export const JWT_CLOCK_SKEW_SECONDS = 30;

const INVALID = 'Invalid or expired token';

export function createJwtCodec(secret: string, ttlSeconds: number, now: () => number = Date.now): JwtCodec {
  const key = Buffer.from(secret, 'utf8');
  const signer = createSigner({ key, algorithm: 'HS256' });
  // The algorithm is pinned: `none`, RS*/ES* and any HS other than HS256 are refused.
  const verifier = createVerifier({ key, algorithms: ['HS256'], requiredClaims: ['exp', 'iat', 'agentId', 'role'], cache: 10_000 });

  return {
    sign({ agentId, role, tokenId, scope }) {
      const iat = Math.floor(now() / 1000);
      const claims: SessionClaims = { agentId, role, iat, exp: iat + ttlSeconds };
      if (tokenId !== undefined) claims.tid = tokenId;
      if (scope !== undefined) claims.scp = scope;
      return { token: signer(claims), claims };
    },
    verify(token) {
      let payload: unknown;
      try {
        payload = verifier(token);
      } catch {
        throw unauthenticated(INVALID);
      }
      const claims = payload as Partial<SessionClaims>;
      const { agentId, role, iat, exp } = claims;
      if (!isUuid(agentId) || !ROLES.includes(role as Role)) throw unauthenticated(INVALID);
      // A signed token could still carry an `exp` of 1e400 (Infinity) or years away: none this
      // service issues lives longer than its configured lifetime, so no token it accepts does.
      if (typeof iat !== 'number' || typeof exp !== 'number' || !Number.isFinite(iat) || !Number.isFinite(exp)) throw unauthenticated(INVALID);
      if (exp - iat > ttlSeconds + JWT_CLOCK_SKEW_SECONDS || iat > now() / 1000 + JWT_CLOCK_SKEW_SECONDS) throw unauthenticated(INVALID);
      const principal: Principal & { exp: number } = { agentId: agentId.toLowerCase(), role: role as Role, exp };
      if (typeof claims.tid === 'string') principal.tokenId = claims.tid;
      if (claims.scp !== undefined) {
        const scope = parseScopeClaim(claims.scp);
        if (scope === null) throw unauthenticated(INVALID);
        principal.scope = scope;
      }
      return principal;
    },
  };
}
