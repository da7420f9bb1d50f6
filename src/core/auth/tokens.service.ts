import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { notFound, validationError } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { findAgentById } from '../agents/agents.store.js';
import { recordAudit } from '../audit/audit.store.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import { parseId, parseTimestamp, requireObject, storableTextProblem } from '../validation.js';
import { generateApiToken, isTokenPrefix } from './api-token.js';
import type { Authz } from './authz.js';
import { scopeProblems } from './scopes.js';
import { hashSecret } from './secret-hash.js';
import { insertToken, revokeTokenByPrefix } from './tokens.store.js';

export interface IssuedToken {
  id: string;
  /** Shown once, here, and never again. */
  token: string;
  prefix: string;
  scopes: Record<string, unknown>;
  expiresAt: string | null;
  createdAt: string;
}

export interface TokensService {
  issue(principal: Principal | null, agentId: string, input: unknown): Promise<IssuedToken>;
  revoke(principal: Principal | null, prefix: string): Promise<void>;
}

const SCOPES_MAX_DEPTH = 16;

/**
 * Scopes are stored as JSON (jsonb on PostgreSQL). Checked without recursion before anything
 * serialises them: nesting is bounded (a deeply nested body would overflow JSON.stringify's stack)
 * and strings, keys included, follow the same rule as every text field (no NUL, no unpaired
 * surrogate), which jsonb would refuse anyway.
 */
function scopesProblem(scopes: object): string | null {
  const stack: [unknown, number][] = [[scopes, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (storableTextProblem(value) !== null) return 'must not contain NUL characters or unpaired surrogates';
    } else if (typeof value === 'object' && value !== null) {
      if (depth > SCOPES_MAX_DEPTH) return `must not be nested more than ${SCOPES_MAX_DEPTH} levels deep`;
      for (const [key, item] of Object.entries(value)) stack.push([key, depth], [item, depth + 1]);
    }
  }
  return null;
}

function parseIssueInput(input: unknown): { scopes: Record<string, unknown>; expiresAt: string | null } {
  const body = input === undefined || input === null ? {} : requireObject(input);
  const details: Record<string, string> = {};
  let scopes: Record<string, unknown> = {};
  if (body.scopes !== undefined) {
    if (typeof body.scopes !== 'object' || body.scopes === null || Array.isArray(body.scopes)) {
      details.scopes = 'must be a JSON object';
    } else {
      scopes = body.scopes as Record<string, unknown>;
      const problem = scopesProblem(scopes);
      if (problem !== null) details.scopes = problem;
      else if (Buffer.byteLength(JSON.stringify(scopes), 'utf8') > 4096) details.scopes = 'must be at most 4096 bytes of JSON';
      else Object.assign(details, scopeProblems(scopes));
    }
  }
  let expiresAt: string | null = null;
  if (body.expiresAt !== undefined && body.expiresAt !== null) {
    const date = typeof body.expiresAt === 'string' ? parseTimestamp(body.expiresAt) : null;
    if (date === null) details.expiresAt = 'must be an ISO 8601 timestamp, e.g. 2026-12-31T23:59:59.000Z';
    else expiresAt = date.toISOString();
  }
  if (Object.keys(details).length > 0) throw validationError(details);
  return { scopes, expiresAt };
}

export function createTokensService(deps: { db: Kysely<DB>; authz: Authz; events: EventPublisher }): TokensService {
  const { db, authz, events } = deps;
  return {
    async issue(principal, agentId, input) {
      authz.requireAdminWhenStrict(principal);
      agentId = parseId(agentId, 'id');
      const { scopes, expiresAt } = parseIssueInput(input);
      if (!(await findAgentById(db, agentId))) throw notFound('Agent');

      for (let attempt = 0; ; attempt++) {
        const { prefix, secret, token } = generateApiToken();
        const issued: IssuedToken = { id: uuidv7(), token, prefix, scopes, expiresAt, createdAt: nowIso() };
        const secretHash = await hashSecret(secret);
        try {
          await db.transaction().execute(async (trx) => {
            await insertToken(trx, { ...issued, agentId, secretHash, revokedAt: null });
            await recordAudit(trx, { event: 'token-issued', actorId: principal?.agentId ?? null, subjectId: agentId, detail: { tokenId: issued.id, prefix } });
          });
          return issued;
        } catch (err) {
          // A 48-bit prefix collision is astronomically rare; draw again rather than fail.
          if (isUniqueViolation(err) && attempt < 3) continue;
          throw err;
        }
      }
    },

    async revoke(principal, prefix) {
      authz.requireAdminWhenStrict(principal);
      if (!isTokenPrefix(prefix)) throw notFound('Token');
      const revoked = await db.transaction().execute(async (trx) => {
        const token = await revokeTokenByPrefix(trx, prefix, nowIso());
        if (token) {
          await recordAudit(trx, { event: 'token-revoked', actorId: principal?.agentId ?? null, subjectId: token.agentId, detail: { tokenId: token.id, prefix } });
        }
        return token;
      });
      if (!revoked) throw notFound('Token');
      await events.publish({ type: 'token.revoked', tokenId: revoked.id, agentId: revoked.agentId, sessionsEnded: authz.sessionsEndWithToken });
    },
  };
}

