import type { Selectable } from 'kysely';
import type { Db, OAuthGrantsTable } from '../../store/schema.js';
import { toIso, toIsoOrNull } from '../../store/values.js';
import { recordAudit } from '../audit/audit.store.js';
import { deleteGrantRecords } from './oauth-records.store.js';

/** An agent's grant to an OAuth client (docs/oauth.md). Never a token: those are hashed records. */
export interface StoredGrant {
  id: string;
  /** The authorization server's id of the grant (its tokens' `grantId`). */
  grantId: string;
  agentId: string;
  /** The API token the person signed in with. */
  tokenId: string;
  clientId: string;
  clientName: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const toGrant = (row: Selectable<OAuthGrantsTable>): StoredGrant => ({
  id: row.id,
  grantId: row.grant_id,
  agentId: row.agent_id,
  tokenId: row.token_id,
  clientId: row.client_id,
  clientName: row.client_name,
  scopes: JSON.parse(row.scopes) as string[],
  createdAt: toIso(row.created_at),
  lastUsedAt: toIsoOrNull(row.last_used_at),
  revokedAt: toIsoOrNull(row.revoked_at),
});

export async function insertGrant(db: Db, grant: Omit<StoredGrant, 'lastUsedAt' | 'revokedAt'>): Promise<void> {
  await db.insertInto('oauth_grants').values({
    id: grant.id,
    grant_id: grant.grantId,
    agent_id: grant.agentId,
    token_id: grant.tokenId,
    client_id: grant.clientId,
    client_name: grant.clientName,
    scopes: JSON.stringify(grant.scopes),
    created_at: grant.createdAt,
  }).execute();
}

export async function listGrantsOfAgent(db: Db, agentId: string, limit: number): Promise<StoredGrant[]> {
  const rows = await db.selectFrom('oauth_grants').selectAll().where('agent_id', '=', agentId).orderBy('created_at').orderBy('id').limit(limit).execute();
  return rows.map(toGrant);
}

export async function findGrant(db: Db, id: string): Promise<StoredGrant | null> {
  const row = await db.selectFrom('oauth_grants').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toGrant(row) : null;
}

export async function findGrantByGrantId(db: Db, grantId: string): Promise<StoredGrant | null> {
  const row = await db.selectFrom('oauth_grants').selectAll().where('grant_id', '=', grantId).executeTakeFirst();
  return row ? toGrant(row) : null;
}

/**
 * Ends grants (those of a token, an agent, or one): marks them revoked, deletes their codes and
 * tokens, and records `oauth-grant-revoked` for each. Returns the grants it ended.
 */
export async function endGrants(
  db: Db,
  which: { id: string } | { grantId: string } | { tokenId: string } | { agentId: string },
  at: string,
  audit: { actorId: string | null; reason: string },
): Promise<StoredGrant[]> {
  let query = db.updateTable('oauth_grants').set({ revoked_at: at }).where('revoked_at', 'is', null);
  if ('id' in which) query = query.where('id', '=', which.id);
  else if ('grantId' in which) query = query.where('grant_id', '=', which.grantId);
  else if ('tokenId' in which) query = query.where('token_id', '=', which.tokenId);
  else query = query.where('agent_id', '=', which.agentId);
  const ended = (await query.returningAll().execute()).map(toGrant);
  for (const grant of ended) {
    await deleteGrantRecords(db, grant.grantId);
    await recordAudit(db, {
      event: 'oauth-grant-revoked',
      actorId: audit.actorId,
      subjectId: grant.id,
      detail: { agentId: grant.agentId, clientName: grant.clientName, reason: audit.reason },
    });
  }
  return ended;
}

/** What `/mcp` needs of a grant on each request: it, its agent and the API token it came from. */
export async function findGrantAccess(db: Db, grantId: string): Promise<{
  grant: StoredGrant; role: 'admin' | 'agent'; agentDisabled: boolean; tokenRevoked: boolean; tokenExpiresAt: string | null; tokenScopes: unknown;
} | null> {
  const row = await db
    .selectFrom('oauth_grants as g')
    .innerJoin('agents as a', 'a.id', 'g.agent_id')
    .innerJoin('api_tokens as t', 't.id', 'g.token_id')
    .selectAll('g')
    .select(['a.role', 'a.disabled_at as agent_disabled_at', 't.revoked_at as token_revoked_at', 't.expires_at as token_expires_at', 't.scopes as token_scopes'])
    .where('g.grant_id', '=', grantId)
    .executeTakeFirst();
  if (row === undefined) return null;
  return {
    grant: toGrant(row),
    role: row.role,
    agentDisabled: row.agent_disabled_at !== null,
    tokenRevoked: row.token_revoked_at !== null,
    tokenExpiresAt: toIsoOrNull(row.token_expires_at),
    tokenScopes: row.token_scopes,
  };
}

/** The agent who signs in on the consent page: its name and role; null when there is none. */
export async function findAgentOfGrant(db: Db, agentId: string): Promise<{ id: string; name: string; role: 'admin' | 'agent' } | null> {
  const row = await db.selectFrom('agents').select(['id', 'name', 'role']).where('id', '=', agentId).executeTakeFirst();
  return row ?? null;
}

export async function touchGrant(db: Db, id: string, at: string): Promise<void> {
  await db.updateTable('oauth_grants').set({ last_used_at: at }).where('id', '=', id).execute();
}
