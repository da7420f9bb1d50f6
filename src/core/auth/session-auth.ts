import type { Kysely } from 'kysely';
import { unauthenticated } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { agentStatus } from '../agents/agents.store.js';
import type { Principal } from '../principal.js';
import { isUuid } from '../validation.js';
import { looksLikeApiToken } from './api-token.js';
import type { Authz } from '../authz/authz.js';
import type { JwtCodec } from './jwt.js';
import { AGENT_DISABLED } from './sessions.service.js';
import { isTokenUnrevoked } from './tokens.store.js';

export type SessionPrincipal = Principal & { exp: number };

/**
 * The one authentication of a session JWT, at every entry point (REST requests, WebSocket
 * handshakes): the JWT itself (HS256 signature, `exp` and `iat`, claims; jwt.ts), then its agent
 * (it exists and is not disabled), then, where the policy ends a session with its API token (strict
 * mode), that token's state.
 *
 * Agent and token state come from the database, behind small per-node caches (a primary-key lookup
 * on every request cost 25 to 40 % of the throughput of a cheap endpoint; docs/reliability.md):
 * - "active" / "not revoked" is kept for at most ACTIVE_TTL_MS; nothing else is cached;
 * - a change (the `agent.disabled`, `agent.enabled` and `token.revoked` events) applies on every
 *   node, this one included, before its request answers: the event bridge
 *   (cluster/event-bridge.ts) calls `revoked()` and `agentChanged()`;
 * - so a node that missed a relay (Redis away) is wrong for at most ACTIVE_TTL_MS.
 * Checks that must not trust the cache (after a socket joined its agent's and token's channels) pass `fresh`.
 */
export interface SessionAuth {
  /**
   * The principal of a session JWT, or UNAUTHENTICATED (an API token is not a session JWT). `fresh`:
   * the agent's and token's state are read, not taken from the cache.
   */
  authenticate(jwt: string, options?: { fresh?: boolean }): Promise<SessionPrincipal>;
  /**
   * Throws UNAUTHENTICATED when the principal's agent does not exist or is disabled, or when the
   * policy ends sessions with their API token and that token was revoked.
   */
  assertLive(principal: Principal, options?: { fresh?: boolean }): Promise<void>;
  /** The token was revoked (here or on another node): its sessions are refused from now on. */
  revoked(tokenId: string): void;
  /** The agent was disabled or enabled (here or on another node): its state is read again. */
  agentChanged(agentId: string): void;
  /**
   * How many revocations and agent changes this node has heard of so far: a caller that read the
   * state fresh and finds the count unchanged since before that read knows nothing changed meanwhile.
   */
  changesHeard(): number;
}

export const ACTIVE_TTL_MS = 5_000;
const MAX_ACTIVE_ENTRIES = 10_000;
export const REVOKED = 'The API token of this session was revoked';
const INVALID = 'Invalid or expired token';

/** A bounded map of id -> until when a positive answer may be trusted. */
class TrustCache {
  private readonly until = new Map<string, number>();
  constructor(private readonly now: () => number) {}
  trusted = (id: string): boolean => (this.until.get(id) ?? 0) > this.now();
  trust(id: string): void {
    if (this.until.size >= MAX_ACTIVE_ENTRIES && !this.until.has(id)) this.until.delete(this.until.keys().next().value!);
    this.until.set(id, this.now() + ACTIVE_TTL_MS);
  }
  forget = (id: string): boolean => this.until.delete(id);
}

export function createSessionAuth(deps: { db: Kysely<DB>; authz: Authz; jwt: JwtCodec; jwtTtlSeconds: number; now?: () => number }): SessionAuth {
  const { db, authz, jwt } = deps;
  const now = deps.now ?? Date.now;
  const activeTokens = new TrustCache(now);
  /** tokenId -> until when to remember it revoked: after that no JWT of it can still verify. */
  const revokedUntil = new Map<string, number>();
  const activeAgents = new TrustCache(now);
  /** Bumped by every agent change: a lookup that overlapped one does not fill the cache. */
  let agentEpoch = 0;
  let changesHeard = 0;

  const markRevoked = (id: string): void => {
    if (!isUuid(id)) return;
    const tokenId = id.toLowerCase();
    changesHeard++;
    const t = now();
    activeTokens.forget(tokenId);
    revokedUntil.set(tokenId, t + deps.jwtTtlSeconds * 1000);
    if (revokedUntil.size > 1000) for (const [id, until] of revokedUntil) if (until <= t) revokedUntil.delete(id);
  };

  const agentChanged = (id: string): void => {
    agentEpoch++;
    changesHeard++;
    activeAgents.forget(id.toLowerCase());
  };

  const assertAgentActive = async (agentId: string, fresh: boolean): Promise<void> => {
    if (!fresh && activeAgents.trusted(agentId)) return;
    const epoch = agentEpoch;
    const status = await agentStatus(db, agentId);
    // A JWT whose agent does not exist (another deployment's, or forged with the secret) is refused
    // here, so no write of it reaches a foreign key.
    if (status === 'unknown') throw unauthenticated(INVALID);
    if (status === 'disabled') throw unauthenticated(AGENT_DISABLED);
    if (epoch === agentEpoch) activeAgents.trust(agentId);
  };

  const assertTokenUnrevoked = async (principal: Principal, fresh: boolean): Promise<void> => {
    // Every JWT the exchange signs names its token (`tid`). One that does not could never be
    // revoked, so strict mode does not accept it.
    if (!isUuid(principal.tokenId)) throw unauthenticated(INVALID);
    const tokenId = principal.tokenId.toLowerCase();
    if ((revokedUntil.get(tokenId) ?? 0) > now()) throw unauthenticated(REVOKED);
    if (!fresh && activeTokens.trusted(tokenId)) return;

    if (!(await isTokenUnrevoked(db, tokenId))) {
      markRevoked(tokenId);
      throw unauthenticated(REVOKED);
    }
    // A revocation that arrived while this read was in flight wins over its (older) answer.
    if ((revokedUntil.get(tokenId) ?? 0) > now()) throw unauthenticated(REVOKED);
    activeTokens.trust(tokenId);
  };

  const assertLive: SessionAuth['assertLive'] = async (principal, options = {}) => {
    const fresh = options.fresh === true;
    await assertAgentActive(principal.agentId, fresh);
    if (authz.sessionsEndWithToken) await assertTokenUnrevoked(principal, fresh);
  };

  return {
    async authenticate(token, options) {
      if (looksLikeApiToken(token)) throw unauthenticated('An API token cannot be used here; exchange it at POST /api/v1/sessions');
      const principal = jwt.verify(token);
      await assertLive(principal, options);
      return principal;
    },
    assertLive,
    revoked: markRevoked,
    agentChanged,
    changesHeard: () => changesHeard,
  };
}
