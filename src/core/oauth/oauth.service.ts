import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { unauthenticated } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { fromJson, nowIso } from '../../store/values.js';
import { recordAudit } from '../audit/audit.store.js';
import type { EventPublisher } from '../events.js';
import { SCOPE_ACTIONS, type Principal, type ScopeAction } from '../principal.js';
import { isUuid } from '../validation.js';
import { endGrants, findAgentOfGrant, findGrantAccess, insertGrant, listGrantsOfAgent, touchGrant, type StoredGrant } from '../grants/oauth-grants.store.js';
import { findAccessToken } from '../grants/oauth-records.store.js';

/**
 * OAuth 2.1 for MCP clients (docs/oauth.md), the domain's part: who signs in (an agent's API token),
 * what a grant may hold (the token's actions, never `admin` for a non-admin), the grants listed and
 * revoked with the agent's tokens, and the one decision on an access token at `/mcp`. The protocol
 * itself (registration, authorization, tokens, revocation) is the OAuth library's, in src/http/oauth/.
 */

/** The person signed in on the consent page: the agent, and the API token used. */
export interface SignedIn {
  agentId: string;
  agentName: string;
  role: 'admin' | 'agent';
  tokenId: string;
  /** The actions this API token may grant (its own, `admin` only for an admin). */
  grantable: ScopeAction[];
}

/** A grant as listed with the agent's API tokens (`kind: "oauth"`). */
export interface GrantSummary {
  id: string;
  kind: 'oauth';
  clientId: string;
  clientName: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface OAuthPrincipal extends Principal {
  oauth: { grantId: string };
  tokenId: string;
}

export interface OAuthService {
  /** The agent and token behind an API token typed on the consent page; UNAUTHENTICATED (invalid, revoked, disabled). */
  signIn(apiToken: string): Promise<SignedIn>;
  /** What a grant will hold for a request's `scope` (null: none asked): asked-for actions not grantable are left out. */
  scopesFor(signedIn: SignedIn, requested: readonly string[] | null): ScopeAction[];
  /** Records a grant the person allowed (`oauth-grant-created`). */
  recordGrant(input: { grantId: string; signedIn: SignedIn; clientId: string; clientName: string; scopes: readonly string[] }): Promise<StoredGrant>;
  /** Records a client's registration (`oauth-client-registered`). */
  clientRegistered(clientId: string, clientName: string): Promise<void>;
  /** Whether a grant may still issue tokens (not revoked, its agent enabled, its API token live). */
  isGrantLive(grantId: string): Promise<boolean>;
  /** The authorization server ended a grant itself (a reused refresh token, a revoked one). */
  grantEnded(grantId: string, reason: string): Promise<void>;
  /** The principal of an OAuth access token presented at `resource`; UNAUTHENTICATED otherwise. */
  authenticate(accessToken: string, resource: string): Promise<OAuthPrincipal>;
  /** An agent's grants (listed with its tokens). */
  listGrants(agentId: string): Promise<GrantSummary[]>;
}

export const GRANTS_LIST_MAX = 1000;

/** A grant's `lastUsedAt` is written at most this often (as an API token's). */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * How an API token typed on the consent page is authenticated (core/auth's ApiTokenAuth, passed in:
 * this feature imports nothing of auth, which imports it to end grants with their token).
 */
export interface ApiTokenAuthenticator {
  authenticate(apiToken: string): Promise<Principal>;
}

/**
 * The rooms of an API token's stored `scopes` (docs/scopes.md): absent, every room; a stored value
 * that is not a list of room ids grants none, as the token's own sessions would.
 */
function roomsOf(scopes: unknown): string[] | undefined {
  const rooms = typeof scopes === 'object' && scopes !== null ? (scopes as { rooms?: unknown }).rooms : undefined;
  if (rooms === undefined) return undefined;
  return Array.isArray(rooms) && rooms.every(isUuid) ? (rooms as string[]).map((r) => r.toLowerCase()) : [];
}

const toSummary = (g: StoredGrant): GrantSummary => ({
  id: g.id, kind: 'oauth', clientId: g.clientId, clientName: g.clientName, scopes: g.scopes, createdAt: g.createdAt, lastUsedAt: g.lastUsedAt, revokedAt: g.revokedAt,
});

const isAction = (value: string): value is ScopeAction => (SCOPE_ACTIONS as readonly string[]).includes(value);

export function createOAuthService(deps: { db: Kysely<DB>; events: EventPublisher; apiTokenAuth: ApiTokenAuthenticator; now?: () => number }): OAuthService {
  const { db, events, apiTokenAuth } = deps;
  const now = deps.now ?? Date.now;

  const publishEnded = async (grants: readonly StoredGrant[]): Promise<void> => {
    // The grant's id travels as a revoked token's: every node closes its live requests (event bridge).
    for (const grant of grants) await events.publish({ type: 'token.revoked', tokenId: grant.id, agentId: grant.agentId, sessionsEnded: true });
  };

  return {
    async signIn(apiToken) {
      const principal = await apiTokenAuth.authenticate(apiToken.trim());
      const agent = await findAgentOfGrant(db, principal.agentId);
      if (agent === null || principal.tokenId === undefined) throw unauthenticated('Invalid or expired API token');
      const own = principal.scope?.actions ?? SCOPE_ACTIONS;
      const grantable = own.filter((a) => a !== 'admin' || agent.role === 'admin');
      return { agentId: agent.id, agentName: agent.name, role: agent.role, tokenId: principal.tokenId.toLowerCase(), grantable };
    },

    scopesFor(signedIn, requested) {
      if (requested === null || requested.length === 0) return signedIn.grantable.filter((a) => a !== 'admin');
      return signedIn.grantable.filter((a) => requested.includes(a));
    },

    async recordGrant({ grantId, signedIn, clientId, clientName, scopes }) {
      const grant = { id: uuidv7(), grantId, agentId: signedIn.agentId, tokenId: signedIn.tokenId, clientId, clientName, scopes: [...scopes], createdAt: nowIso() };
      await db.transaction().execute(async (trx) => {
        await insertGrant(trx, grant);
        await recordAudit(trx, { event: 'oauth-grant-created', actorId: signedIn.agentId, subjectId: grant.id, detail: { clientId, clientName, scopes } });
      });
      return { ...grant, lastUsedAt: null, revokedAt: null };
    },

    async clientRegistered(clientId, clientName) {
      await recordAudit(db, { event: 'oauth-client-registered', actorId: null, subjectId: clientId, detail: { clientName } });
    },

    async isGrantLive(grantId) {
      const access = await findGrantAccess(db, grantId);
      return access !== null && access.grant.revokedAt === null && !access.agentDisabled && !access.tokenRevoked
        && (access.tokenExpiresAt === null || Date.parse(access.tokenExpiresAt) > now());
    },

    async grantEnded(grantId, reason) {
      const ended = await db.transaction().execute((trx) => endGrants(trx, { grantId }, nowIso(), { actorId: null, reason }));
      await publishEnded(ended);
    },

    async authenticate(accessToken, resource) {
      const token = await findAccessToken(db, accessToken, now());
      if (token === null) throw unauthenticated('Invalid or expired token');
      const audience = Array.isArray(token.aud) ? token.aud : [token.aud];
      if (!audience.includes(resource)) throw unauthenticated('This access token is not for this resource');
      const access = await findGrantAccess(db, token.grantId);
      if (access === null || access.grant.revokedAt !== null) throw unauthenticated('The grant of this access token was revoked');
      if (access.agentDisabled) throw unauthenticated('This agent is disabled');
      if (access.tokenRevoked) throw unauthenticated('The API token of this grant was revoked');
      if (access.tokenExpiresAt !== null && Date.parse(access.tokenExpiresAt) <= now()) throw unauthenticated('The API token of this grant has expired');
      const { grant } = access;
      if (grant.lastUsedAt === null || now() - Date.parse(grant.lastUsedAt) >= LAST_USED_RESOLUTION_MS) await touchGrant(db, grant.id, nowIso());
      const actions = token.scope.split(' ').filter(isAction);
      const rooms = roomsOf(fromJson(access.tokenScopes));
      return {
        agentId: grant.agentId,
        role: access.role,
        tokenId: grant.tokenId,
        scope: rooms === undefined ? { actions } : { actions, rooms },
        oauth: { grantId: grant.id },
      };
    },

    async listGrants(agentId) {
      return (await listGrantsOfAgent(db, agentId, GRANTS_LIST_MAX)).map(toSummary);
    },

  };
}
