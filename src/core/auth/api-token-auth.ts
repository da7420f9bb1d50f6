import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { AppError, unauthenticated } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { looksLikeApiToken } from './api-token.js';
import { ACTIVE_TTL_MS, REVOKED, type SessionAuth, type SessionPrincipal } from './session-auth.js';
import { AGENT_DISABLED, type SessionsService } from './sessions.service.js';
import { findTokenState } from './tokens.store.js';

/**
 * Authentication with an API token sent as a bearer on every request (docs/mcp.md, `/mcp`):
 * a client keeps one static header instead of exchanging and renewing JWTs.
 *
 * The Argon2id verification (tens of milliseconds of CPU) runs once per token and node: it is the
 * session exchange itself (sessions.service.ts: the same checks, the same hashing gate, the same
 * `jwt-issued` audit record), and the session JWT it gives is kept, keyed by a SHA-256 of the token,
 * for at most VERIFIED_TTL_MS. Every request still checks that cached entry:
 * - revocation: applied on every node, this one included, before the revocation answers (the event
 *   bridge, cluster/event-bridge.ts, calls `revoked()`), and the token's row is read again once ACTIVE_TTL_MS passed (as SessionAuth does),
 *   so a node that missed a bus message is wrong for at most that long;
 * - expiry (`expiresAt`), against the clock, on every request;
 * - then the kept JWT goes through SessionAuth.authenticate like any other: the agent disabled, the
 *   JWT's own expiry, strict mode's token state, and whatever the principal carries (its scopes).
 */
export interface ApiTokenAuth {
  /** The principal of an API token, or UNAUTHENTICATED (missing, invalid, revoked, expired, agent disabled). */
  authenticate(apiToken: string): Promise<SessionPrincipal>;
  /** Whether the token's verification is cached here (a request that is not pays a hash). */
  isVerified(apiToken: string): boolean;
  /** The token was revoked (here or on another node). */
  revoked(tokenId: string): void;
}

/** How long a verification is reused; the token's state is checked far more often (ACTIVE_TTL_MS). */
export const VERIFIED_TTL_MS = 5 * 60_000;
/** A kept session JWT is replaced this long before it expires. */
const JWT_RENEW_MARGIN_MS = 60_000;
const MAX_ENTRIES = 10_000;
const EXPIRED = 'The API token has expired';

interface Entry {
  jwt: string;
  tokenId: string;
  /** Epoch ms; null: the token never expires. */
  expiresAt: number | null;
  /** Until when this verification may be reused. */
  until: number;
  /** Until when the token's row need not be read again. */
  checkedUntil: number;
}

const keyOf = (apiToken: string): string => createHash('sha256').update(apiToken).digest('base64url');

export function createApiTokenAuth(deps: { db: Kysely<DB>; sessions: SessionsService; sessionAuth: SessionAuth; now?: () => number }): ApiTokenAuth {
  const { db, sessions, sessionAuth } = deps;
  const now = deps.now ?? Date.now;
  const entries = new Map<string, Entry>();
  /** Verifications in flight, so concurrent first requests with one token hash it once. */
  const verifying = new Map<string, Promise<Entry>>();
  /** tokenId -> until when to refuse it here: longer than any entry made before the revocation lives. */
  const revokedUntil = new Map<string, number>();

  const isRevoked = (tokenId: string): boolean => (revokedUntil.get(tokenId) ?? 0) > now();

  const markRevoked = (tokenId: string): void => {
    const t = now();
    revokedUntil.set(tokenId.toLowerCase(), t + VERIFIED_TTL_MS);
    if (revokedUntil.size > 1000) for (const [id, until] of revokedUntil) if (until <= t) revokedUntil.delete(id);
  };

  /** Reads the token's row: refuses a revoked or deleted token, and learns its expiry. */
  const checkState = async (entry: Pick<Entry, 'tokenId' | 'expiresAt' | 'checkedUntil'>): Promise<void> => {
    const state = await findTokenState(db, entry.tokenId);
    if (state === null || state.revoked) {
      markRevoked(entry.tokenId);
      throw unauthenticated(REVOKED);
    }
    entry.expiresAt = state.expiresAt === null ? null : Date.parse(state.expiresAt);
    entry.checkedUntil = now() + ACTIVE_TTL_MS;
  };

  const verify = async (apiToken: string): Promise<Entry> => {
    let session;
    try {
      session = await sessions.exchange({ bearer: apiToken, body: undefined });
    } catch (err) {
      // A disabled agent's JWTs are 401 here as on REST (docs/protocol.md, Disabled agents), not the exchange's 403.
      if (err instanceof AppError && err.code === 'FORBIDDEN') throw unauthenticated(AGENT_DISABLED);
      throw err;
    }
    const principal = await sessionAuth.authenticate(session.token);
    if (principal.tokenId === undefined) throw unauthenticated();
    const entry: Entry = { jwt: session.token, tokenId: principal.tokenId.toLowerCase(), expiresAt: null, until: 0, checkedUntil: 0 };
    await checkState(entry);
    entry.until = Math.min(now() + VERIFIED_TTL_MS, principal.exp * 1000 - JWT_RENEW_MARGIN_MS);
    return entry;
  };

  const cachedEntry = async (apiToken: string): Promise<Entry> => {
    const key = keyOf(apiToken);
    const cached = entries.get(key);
    if (cached !== undefined && cached.until > now()) return cached;
    let pending = verifying.get(key);
    if (pending === undefined) {
      pending = verify(apiToken);
      verifying.set(key, pending);
      void pending.then(
        (entry) => {
          verifying.delete(key);
          if (entry.until <= now()) return; // a JWT lifetime too short to be worth keeping
          entries.delete(key);
          if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
          entries.set(key, entry);
        },
        () => verifying.delete(key),
      );
    }
    return pending;
  };

  return {
    async authenticate(apiToken) {
      if (!looksLikeApiToken(apiToken)) throw unauthenticated('Invalid or expired API token');
      const entry = await cachedEntry(apiToken);
      if (isRevoked(entry.tokenId)) throw unauthenticated(REVOKED);
      if (entry.checkedUntil <= now()) {
        await checkState(entry);
        // A revocation that arrived while the row was read wins over the (older) answer.
        if (isRevoked(entry.tokenId)) throw unauthenticated(REVOKED);
      }
      if (entry.expiresAt !== null && entry.expiresAt <= now()) throw unauthenticated(EXPIRED);
      return sessionAuth.authenticate(entry.jwt);
    },
    isVerified(apiToken) {
      const cached = entries.get(keyOf(apiToken));
      return cached !== undefined && cached.until > now();
    },
    revoked: markRevoked,
  };
}
