import { createSigner, createVerifier } from 'fast-jwt';
import { unauthenticated } from '../../errors.js';
import { ROLES, type Principal, type Role } from '../principal.js';

export interface SessionClaims {
  agentId: string;
  role: Role;
  iat: number;
  exp: number;
  /** Id of the API token the session was exchanged for. */
  tid?: string;
}

export interface JwtCodec {
  /** Signs a session JWT; `exp` is `now + ttl` in seconds. */
  sign(principal: { agentId: string; role: Role; tokenId?: string }): { token: string; claims: SessionClaims };
  /** Verifies signature (HS256 only), `exp` (required) and claim shapes; throws 401 otherwise. */
  verify(token: string): Principal & { exp: number };
}

export function createJwtCodec(secret: string, ttlSeconds: number): JwtCodec {
  const key = Buffer.from(secret, 'utf8');
  const signer = createSigner({ key, algorithm: 'HS256' });
  // The algorithm is pinned: `none`, RS*/ES* and any HS other than HS256 are refused.
  const verifier = createVerifier({ key, algorithms: ['HS256'], requiredClaims: ['exp', 'agentId', 'role'], cache: 10_000 });

  return {
    sign({ agentId, role, tokenId }) {
      const iat = Math.floor(Date.now() / 1000);
      const claims: SessionClaims = { agentId, role, iat, exp: iat + ttlSeconds };
      if (tokenId !== undefined) claims.tid = tokenId;
      return { token: signer(claims), claims };
    },
    verify(token) {
      let payload: unknown;
      try {
        payload = verifier(token);
      } catch {
        throw unauthenticated('Invalid or expired token');
      }
      const claims = payload as Partial<SessionClaims>;
      if (typeof claims.agentId !== 'string' || !ROLES.includes(claims.role as Role) || typeof claims.exp !== 'number') {
        throw unauthenticated('Invalid or expired token');
      }
      const principal: Principal & { exp: number } = { agentId: claims.agentId, role: claims.role as Role, exp: claims.exp };
      if (typeof claims.tid === 'string') principal.tokenId = claims.tid;
      return principal;
    },
  };
}
