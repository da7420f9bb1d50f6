import type { CompiledQuery, Selectable } from 'kysely';
import { prepared } from '../../store/prepared.js';
import type { ApiTokensTable, Db } from '../../store/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../store/values.js';
import type { Principal, Role } from '../principal.js';

export interface StoredToken {
  id: string;
  agentId: string;
  prefix: string;
  secretHash: string;
  scopes: Record<string, unknown>;
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
  /** The last session exchange, to the minute (LAST_USED_RESOLUTION_MS); null: never exchanged. */
  lastUsedAt: string | null;
}

/** `lastUsedAt` is written at most this often per token: an exchange storm writes nothing more. */
export const LAST_USED_RESOLUTION_MS = 60_000;

const toToken = (row: Selectable<ApiTokensTable>): StoredToken => ({
  id: row.id,
  agentId: row.agent_id,
  prefix: row.prefix,
  secretHash: row.secret_hash,
  scopes: fromJson(row.scopes) as Record<string, unknown>,
  expiresAt: toIsoOrNull(row.expires_at),
  revokedAt: toIsoOrNull(row.revoked_at),
  createdAt: toIso(row.created_at),
  lastUsedAt: toIsoOrNull(row.last_used_at),
});

export async function insertToken(db: Db, token: Omit<StoredToken, 'lastUsedAt'>): Promise<void> {
  await db
    .insertInto('api_tokens')
    .values({
      id: token.id,
      agent_id: token.agentId,
      prefix: token.prefix,
      secret_hash: token.secretHash,
      scopes: JSON.stringify(token.scopes),
      expires_at: token.expiresAt,
      revoked_at: null,
      created_at: token.createdAt,
    })
    .execute();
}

/** The token with what a session exchange needs of its agent: its role and whether it is disabled. */
// Compiled once: it runs on every session exchange, and one read serves both (a read after a
// commit re-reads its pages: a second lookup was measurable in scenario 4).
const tokenByPrefixQuery = prepared((db, p: { prefix: string }) =>
  db
    .selectFrom('api_tokens')
    .innerJoin('agents', 'agents.id', 'api_tokens.agent_id')
    .selectAll('api_tokens')
    .select(['agents.role', 'agents.disabled_at as agent_disabled_at'])
    .where('api_tokens.prefix', '=', p.prefix),
);

export async function findTokenByPrefix(db: Db, prefix: string): Promise<(StoredToken & { role: Role; agentDisabled: boolean }) | null> {
  const [row] = (await tokenByPrefixQuery(db, { prefix })).rows;
  return row ? { ...toToken(row), role: row.role, agentDisabled: row.agent_disabled_at !== null } : null;
}

/** Marks an active token revoked; returns it, or null when there is no active token with that prefix. */
export async function revokeTokenByPrefix(db: Db, prefix: string, at: string): Promise<StoredToken | null> {
  const row = await db
    .updateTable('api_tokens')
    .set({ revoked_at: at })
    .where('prefix', '=', prefix)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return row ? toToken(row) : null;
}

/**
 * Whether the token exists and was not revoked (its expiry is not considered: a session JWT is
 * bounded by its own `exp`). A primary-key lookup: it runs on every strict-mode request.
 */
export async function isTokenUnrevoked(db: Db, tokenId: string): Promise<boolean> {
  const row = await db.selectFrom('api_tokens').select('revoked_at').where('id', '=', tokenId).executeTakeFirst();
  return row !== undefined && row.revoked_at === null;
}

/**
 * What may change about an API token after it was issued, for the API-token authentication's
 * periodic recheck: null when the token does not exist. A primary-key lookup.
 */
export async function findTokenState(db: Db, tokenId: string): Promise<{ revoked: boolean; expiresAt: string | null } | null> {
  const row = await db.selectFrom('api_tokens').select(['revoked_at', 'expires_at']).where('id', '=', tokenId).executeTakeFirst();
  return row ? { revoked: row.revoked_at !== null, expiresAt: toIsoOrNull(row.expires_at) } : null;
}

/** An agent's tokens, oldest first (at most `limit`: an agent rarely holds more than a few). */
export async function listTokensOfAgent(db: Db, agentId: string, limit: number): Promise<StoredToken[]> {
  const rows = await db.selectFrom('api_tokens').selectAll().where('agent_id', '=', agentId).orderBy('created_at').orderBy('id').limit(limit).execute();
  return rows.map(toToken);
}

/** The prefix of a token by id, to name it in audit records; null when there is none. */
export async function findTokenPrefix(db: Db, tokenId: string): Promise<string | null> {
  const row = await db.selectFrom('api_tokens').select('prefix').where('id', '=', tokenId).executeTakeFirst();
  return row?.prefix ?? null;
}

/** Whether an exchange at `now` should record the token's use (not within the resolution of the last). */
export function lastUsedIsStale(lastUsedAt: string | null, now: Date): boolean {
  return lastUsedAt === null || now.getTime() - new Date(lastUsedAt).getTime() >= LAST_USED_RESOLUTION_MS;
}

/** The statement recording that a token was exchanged at `at`, for a group commit. */
export function touchTokenStatement(db: Db, tokenId: string, at: string): CompiledQuery {
  return db.updateTable('api_tokens').set({ last_used_at: at }).where('id', '=', tokenId).compile();
}

/**
 * What an audit record of a change says about the token that made it: `{actorToken: <prefix>}`
 * (a prefix names a token and is no secret), or nothing for a caller without one.
 */
export async function actorTokenDetail(db: Db, principal: Principal | null): Promise<{ actorToken?: string }> {
  if (principal?.tokenId === undefined) return {};
  const prefix = await findTokenPrefix(db, principal.tokenId);
  return prefix === null ? {} : { actorToken: prefix };
}
