import type { Kysely } from 'kysely';
import { unauthenticated } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import { isUuid } from '../validation.js';
import type { Authz } from './authz.js';
import type { SessionsService } from './sessions.service.js';
import { isTokenUnrevoked } from './tokens.store.js';

export type SessionPrincipal = Principal & { exp: number };

/**
 * Authentication of a session JWT at every entry point (REST requests, WebSocket handshakes): the
 * JWT itself (HS256 signature, `exp`, claims), then, where the policy ends a session with its API
 * token (strict mode), that token's state.
 *
 * The token state comes from the database, behind a small per-node cache (a primary-key lookup on
 * every request cost 25 to 40 % of the throughput of a cheap endpoint; docs/reliability.md):
 * - "not revoked" is kept for at most ACTIVE_TTL_MS;
 * - a revocation marks the token revoked on this node before the revoking request answers (the
 *   `token.revoked` event, see `publisher`), and on every other node through `revoked()`, which the
 *   real-time layer calls when another node relays it (and waits for their acknowledgements);
 * - so a node that missed the relay (Redis away) is wrong for at most ACTIVE_TTL_MS.
 * Checks that must not trust the cache (after a socket joined its token's channel) pass `fresh`.
 */
export interface SessionAuth {
  authenticate(jwt: string): Promise<SessionPrincipal>;
  /** Throws UNAUTHENTICATED when the policy ends sessions with their API token and that token was revoked. */
  assertLive(principal: Principal, options?: { fresh?: boolean }): Promise<void>;
  /** The token was revoked (here or on another node): its sessions are refused from now on. */
  revoked(tokenId: string): void;
  /** Marks revoked tokens on this node as soon as the revocation commits. */
  publisher: EventPublisher;
}

export const ACTIVE_TTL_MS = 5_000;
const MAX_ACTIVE_ENTRIES = 10_000;
const REVOKED = 'The API token of this session was revoked';

export function createSessionAuth(deps: { db: Kysely<DB>; authz: Authz; sessions: SessionsService; jwtTtlSeconds: number; now?: () => number }): SessionAuth {
  const { db, authz, sessions } = deps;
  const now = deps.now ?? Date.now;
  /** tokenId -> until when "not revoked" may be trusted. */
  const active = new Map<string, number>();
  /** tokenId -> until when to remember it revoked: after that no JWT of it can still verify. */
  const revokedUntil = new Map<string, number>();

  const markRevoked = (id: string): void => {
    if (!isUuid(id)) return;
    const tokenId = id.toLowerCase();
    const t = now();
    active.delete(tokenId);
    revokedUntil.set(tokenId, t + deps.jwtTtlSeconds * 1000);
    if (revokedUntil.size > 1000) for (const [id, until] of revokedUntil) if (until <= t) revokedUntil.delete(id);
  };

  const assertLive: SessionAuth['assertLive'] = async (principal, options = {}) => {
    if (!authz.sessionsEndWithToken) return;
    // Every JWT the exchange signs names its token (`tid`). One that does not could never be
    // revoked, so strict mode does not accept it.
    if (!isUuid(principal.tokenId)) throw unauthenticated('Invalid or expired token');
    const tokenId = principal.tokenId.toLowerCase();
    if ((revokedUntil.get(tokenId) ?? 0) > now()) throw unauthenticated(REVOKED);
    if (!options.fresh && (active.get(tokenId) ?? 0) > now()) return;

    if (!(await isTokenUnrevoked(db, tokenId))) {
      markRevoked(tokenId);
      throw unauthenticated(REVOKED);
    }
    // A revocation that arrived while this read was in flight wins over its (older) answer.
    if ((revokedUntil.get(tokenId) ?? 0) > now()) throw unauthenticated(REVOKED);
    if (active.size >= MAX_ACTIVE_ENTRIES && !active.has(tokenId)) active.delete(active.keys().next().value!);
    active.set(tokenId, now() + ACTIVE_TTL_MS);
  };

  return {
    async authenticate(jwt) {
      const principal = sessions.authenticate(jwt);
      await assertLive(principal);
      return principal;
    },
    assertLive,
    revoked: markRevoked,
    publisher: {
      publish(event) {
        if (event.type === 'token.revoked' && event.sessionsEnded) markRevoked(event.tokenId);
        return Promise.resolve();
      },
    },
  };
}
