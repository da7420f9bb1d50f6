import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { AppError, notFound, validationError, type ErrorDetails } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { findAgentById } from '../agents/agents.store.js';
import { recordAudit } from '../audit/audit.store.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import { parseId, parseTimestamp, requireObject, storableTextProblem } from '../validation.js';
import { generateApiToken, isTokenPrefix } from './api-token.js';
import type { Authz } from '../authz/authz.js';
import { scopeProblems } from './scopes.js';
import { hashSecret } from './secret-hash.js';
import { endGrants, findGrant, listGrantsOfAgent } from '../oauth/oauth-grants.store.js';
import { actorTokenDetail, insertToken, listTokensOfAgent, revokeTokenByPrefix } from './tokens.store.js';

export interface IssuedToken {
  id: string;
  /** Shown once, here, and never again. */
  token: string;
  prefix: string;
  scopes: Record<string, unknown>;
  expiresAt: string | null;
  createdAt: string;
}

/** A token as an admin sees it: never its secret nor the secret's hash. A grant to an OAuth client is listed as one. */
export interface TokenSummary {
  id: string;
  kind: 'api' | 'oauth';
  /** API tokens only. */
  prefix?: string;
  /** OAuth grants only. */
  clientName?: string;
  clientId?: string;
  scopes: Record<string, unknown>;
  expiresAt: string | null;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface TokensService {
  issue(principal: Principal | null, agentId: string, input: unknown): Promise<IssuedToken>;
  revoke(principal: Principal | null, prefix: string): Promise<void>;
  /** An agent's tokens and OAuth grants, revoked and expired ones included (admin, or the agent itself). */
  list(principal: Principal | null, agentId: string, kind?: unknown): Promise<{ tokens: TokenSummary[] }>;
  /** Revokes one of an agent's API tokens or OAuth grants by id (admin in strict mode, or the agent itself). */
  revokeById(principal: Principal | null, agentId: string, tokenId: string): Promise<void>;
}

/** The most tokens one listing returns: issuance is an admin's act, an agent holds a handful. */
export const TOKENS_LIST_MAX = 1000;

/**
 * What makes `scopes` wider than the caller's own token (docs/scopes.md): a token limited to some
 * actions or rooms issues only tokens limited to a subset of them; a caller without a scope (an
 * unrestricted token's session, open mode's anonymous caller) issues any.
 */
function widerThanCaller(principal: Principal | null, scopes: Record<string, unknown>): ErrorDetails {
  const own = principal?.scope;
  const details: ErrorDetails = {};
  if (own === undefined) return details;
  if (own.actions !== undefined) {
    const asked = scopes.actions as string[] | undefined;
    const beyond = asked === undefined ? null : asked.filter((a) => !(own.actions as readonly string[]).includes(a));
    if (beyond === null) details['scopes.actions'] = `required: this token grants only ${own.actions.join(', ') || 'no action'}, and issues no wider token`;
    else if (beyond.length > 0) details['scopes.actions'] = `beyond this token's own actions: ${beyond.join(', ')}`;
  }
  if (own.rooms !== undefined) {
    const asked = scopes.rooms as string[] | undefined;
    const beyond = asked === undefined ? null : asked.filter((r) => !own.rooms!.includes(r.toLowerCase()));
    if (beyond === null) details['scopes.rooms'] = 'required: this token reaches only some rooms, and issues no wider token';
    else if (beyond.length > 0) details['scopes.rooms'] = `beyond this token's own rooms: ${beyond.join(', ')}`;
  }
  return details;
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
      const wider = widerThanCaller(principal, scopes);
      if (Object.keys(wider).length > 0) throw new AppError('FORBIDDEN', 'A token cannot issue a token wider than itself', wider);
      if (!(await findAgentById(db, agentId))) throw notFound('Agent');
      const actor = await actorTokenDetail(db, principal);

      for (let attempt = 0; ; attempt++) {
        const { prefix, secret, token } = generateApiToken();
        const issued: IssuedToken = { id: uuidv7(), token, prefix, scopes, expiresAt, createdAt: nowIso() };
        const secretHash = await hashSecret(secret);
        try {
          await db.transaction().execute(async (trx) => {
            await insertToken(trx, { ...issued, agentId, secretHash, revokedAt: null });
            await recordAudit(trx, { event: 'token-issued', actorId: principal?.agentId ?? null, subjectId: issued.id, detail: { agentId, prefix, ...actor } });
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
      const actor = await actorTokenDetail(db, principal);
      const revoked = await db.transaction().execute(async (trx) => {
        const at = nowIso();
        const token = await revokeTokenByPrefix(trx, prefix, at);
        if (token) {
          await recordAudit(trx, { event: 'token-revoked', actorId: principal?.agentId ?? null, subjectId: token.id, detail: { agentId: token.agentId, prefix, ...actor } });
          // The OAuth grants signed in with it end with it (docs/oauth.md); their live requests close
          // on the token's event.
          await endGrants(trx, { tokenId: token.id }, at, { actorId: principal?.agentId ?? null, reason: 'api-token-revoked' });
        }
        return token;
      });
      if (!revoked) throw notFound('Token');
      await events.publish({ type: 'token.revoked', tokenId: revoked.id, agentId: revoked.agentId, sessionsEnded: authz.sessionsEndWithToken });
    },

    async list(principal, rawAgentId, rawKind) {
      const agentId = parseId(rawAgentId, 'id');
      if (rawKind !== undefined && rawKind !== 'api' && rawKind !== 'oauth') throw validationError({ kind: 'must be "api" or "oauth"' });
      const kind = rawKind as 'api' | 'oauth' | undefined;
      // An admin lists any agent's; the agent itself its own OAuth grants (the console's Connected apps).
      if (!(kind === 'oauth' && principal !== null && principal.agentId === agentId)) authz.requireAdmin(principal);
      if (!(await findAgentById(db, agentId))) throw notFound('Agent');
      const stored = kind === 'oauth' ? [] : await listTokensOfAgent(db, agentId, TOKENS_LIST_MAX);
      // Field by field: the stored row holds the secret's hash, which never leaves the service.
      const tokens: TokenSummary[] = stored.map(({ id, prefix, scopes, expiresAt, createdAt, revokedAt, lastUsedAt }) => ({ id, kind: 'api', prefix, scopes, expiresAt, createdAt, revokedAt, lastUsedAt }));
      const grants = kind === 'api' ? [] : await listGrantsOfAgent(db, agentId, TOKENS_LIST_MAX);
      for (const g of grants) {
        tokens.push({ id: g.id, kind: 'oauth', clientName: g.clientName, clientId: g.clientId, scopes: { actions: g.scopes }, expiresAt: null, createdAt: g.createdAt, revokedAt: g.revokedAt, lastUsedAt: g.lastUsedAt });
      }
      tokens.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
      return { tokens };
    },

    async revokeById(principal, rawAgentId, rawTokenId) {
      const agentId = parseId(rawAgentId, 'id');
      const tokenId = parseId(rawTokenId, 'tokenId');
      if (principal === null || principal.agentId !== agentId) authz.requireAdminWhenStrict(principal);
      const token = (await listTokensOfAgent(db, agentId, TOKENS_LIST_MAX)).find((t) => t.id === tokenId);
      if (token !== undefined) {
        if (token.revokedAt !== null) throw notFound('Token');
        return this.revoke(principal, token.prefix);
      }
      const grant = await findGrant(db, tokenId);
      if (grant === null || grant.agentId !== agentId || grant.revokedAt !== null) throw notFound('Token');
      const ended = await db.transaction().execute((trx) => endGrants(trx, { id: tokenId }, nowIso(), { actorId: principal?.agentId ?? null, reason: 'revoked' }));
      // The grant's id travels as a revoked token's: every node closes its live requests.
      for (const g of ended) await events.publish({ type: 'token.revoked', tokenId: g.id, agentId: g.agentId, sessionsEnded: true });
    },
  };
}

