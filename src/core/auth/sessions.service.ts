import type { Kysely } from 'kysely';
import { forbidden, unauthenticated, validationError } from '../../errors.js';
import { exchangeGateFor, type ExchangeGate } from '../../limits/exchange-gate.js';
import type { DB } from '../../store/schema.js';
import { createWriteBatcher, type WriteBatcherOptions } from '../../store/write-batcher.js';
import { auditStatement, type AuditEntry } from '../audit/audit.store.js';
import { generateApiToken, looksLikeApiToken, parseApiToken } from './api-token.js';
import type { JwtCodec } from './jwt.js';
import { scopeClaim } from './scopes.js';
import { hashSecret, verifySecret } from './secret-hash.js';
import { findTokenByPrefix, lastUsedIsStale, touchTokenStatement } from './tokens.store.js';

export interface SessionRequest {
  /** The Authorization header's bearer value, if any. */
  bearer: string | undefined;
  /** The parsed JSON body, if any. */
  body: unknown;
}

export interface Session {
  token: string;
  expiresAt: string;
}

/** Issues session JWTs; SessionAuth (session-auth.ts) is the one place that accepts them. */
export interface SessionsService {
  exchange(request: SessionRequest): Promise<Session>;
}

const INVALID = 'Invalid or expired API token';
export const AGENT_DISABLED = 'This agent is disabled';

/** Picks the API token from the header and/or body per docs/protocol.md, Sessions. */
function pickApiToken({ bearer, body }: SessionRequest): string {
  let fromBody: string | undefined;
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && 'apiToken' in body) {
    const value = (body as { apiToken: unknown }).apiToken;
    if (typeof value !== 'string') throw validationError({ apiToken: 'must be a string' });
    fromBody = value;
  }
  const fromHeader = bearer !== undefined && looksLikeApiToken(bearer) ? bearer : undefined;
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw validationError({ apiToken: 'differs from the API token in the Authorization header' }, 'Two different API tokens were sent');
  }
  const token = fromBody ?? fromHeader;
  if (token === undefined) throw unauthenticated('An API token is required (Authorization: Bearer agt_... or {"apiToken"})');
  return token;
}

/**
 * The `jwt-issued` records are group-committed, spaced ISSUED_COMMIT_SPACING_MS apart while
 * exchanges succeed at ISSUED_SPACED_FROM_RATE a second or more: in a storm they leave the hashing
 * gate one after another, and a commit of its own (a round trip to SQLite's writer thread, whose
 * wake-ups also interrupt the next hash on a shared core) cost each exchange 0.2 to 0.3 ms of its
 * ~6 (docs/benchmarks.md, scenario 4). Below that rate a record commits at once. Either way an
 * exchange answers only after its record is committed.
 */
const ISSUED_COMMIT_SPACING_MS = 20;
const ISSUED_SPACED_FROM_RATE = 50;

export interface SessionsDeps {
  db: Kysely<DB>;
  jwt: JwtCodec;
  /** The hashing gate (src/limits/); by default one of `exchangeConcurrency` exchanges in flight. */
  gate?: ExchangeGate;
  /** Exchanges in flight (hashing or waiting to) when no gate is given; more are refused with 503. */
  exchangeConcurrency?: number;
  /** Exchanges hashing at once when no gate is given; defaults to the number of cores less one. */
  hashParallelism?: number;
  /** How the `jwt-issued` records share commits (tests); see ISSUED_COMMIT_SPACING_MS. */
  issuedCommits?: WriteBatcherOptions;
}

export function createSessionsService(deps: SessionsDeps): SessionsService {
  const { db, jwt } = deps;
  // SESSION_EXCHANGE_CONCURRENCY bounds the exchanges in flight; a few of them hash at once.
  const gate = deps.gate ?? exchangeGateFor(deps.exchangeConcurrency, deps.hashParallelism);
  // Unknown prefixes and malformed tokens are verified against this hash, so they cost the same
  // time as a wrong secret. Computed up front so that not even the first one takes longer.
  const decoyHash = hashSecret(generateApiToken().secret);
  decoyHash.catch(() => undefined); // awaited (and reported) by the exchange that needs it
  // The token's `lastUsedAt`, when due (at most once a minute per token), shares the record's commit:
  // one update per token and commit, however many of its exchanges the commit holds (the latest time).
  const issuedRecords = createWriteBatcher<{ record: AuditEntry; lastUsed?: { tokenId: string; at: string } }>(db, {
    write: (db, items) => {
      const touched = new Map<string, string>();
      for (const { lastUsed } of items) if (lastUsed) touched.set(lastUsed.tokenId, lastUsed.at);
      return {
        statements: [
          ...items.map(({ record }) => auditStatement(db, record)),
          ...[...touched].map(([tokenId, at]) => touchTokenStatement(db, tokenId, at)),
        ],
      };
    },
  }, deps.issuedCommits ?? { minIntervalMs: ISSUED_COMMIT_SPACING_MS, spaceFromRate: ISSUED_SPACED_FROM_RATE });

  return {
    async exchange(request) {
      const apiToken = pickApiToken(request);
      const parts = parseApiToken(apiToken);
      // The gate holds only the hash: the lookup before it and the JWT and audit record after it
      // run while the next exchange hashes, so the hashing never waits on the database.
      const stored = parts ? await findTokenByPrefix(db, parts.prefix) : null;
      const ok = await gate.run(async () => verifySecret(stored?.secretHash ?? (await decoyHash), parts?.secret ?? apiToken));
      const now = new Date();
      if (!stored || !ok || stored.revokedAt !== null || (stored.expiresAt !== null && new Date(stored.expiresAt) <= now)) {
        throw unauthenticated(INVALID);
      }
      // Told only to the holder of a valid token: a disabled agent keeps its tokens for when it is enabled.
      // Read with the token, before the hash, as its revocation is: an agent disabled meanwhile gets
      // a JWT that every request refuses (SessionAuth checks the agent on each).
      if (stored.agentDisabled) throw forbidden(AGENT_DISABLED);
      const { token, claims } = jwt.sign({ agentId: stored.agentId, role: stored.role, tokenId: stored.id, scope: scopeClaim(stored.scopes) });
      await issuedRecords.write({
        record: { event: 'jwt-issued', actorId: stored.agentId, subjectId: stored.agentId, detail: { tokenId: stored.id, exp: claims.exp } },
        lastUsed: lastUsedIsStale(stored.lastUsedAt, now) ? { tokenId: stored.id, at: now.toISOString() } : undefined,
      });
      return { token, expiresAt: new Date(claims.exp * 1000).toISOString() };
    },
  };
}

