import { AppError, unauthenticated } from '../../errors.js';
import type { AgentsService } from '../agents/agents.service.js';
import type { Principal } from '../principal.js';
import { isUuid } from '../validation.js';
import type { ApiTokenAuth } from './api-token-auth.js';
import { looksLikeApiToken } from './api-token.js';
import type { SessionAuth, SessionPrincipal } from './session-auth.js';
import { AGENT_DISABLED } from './sessions.service.js';

/**
 * The one decision on a credential, for every entry point: REST requests and `/mcp` (the HTTP auth
 * hook), WebSocket handshakes, and anything later. Transports only extract what the client sent
 * (the Bearer header, the handshake's `auth.token` and query `token`, open mode's `X-Agent-Id`)
 * and call these functions;
 * what is accepted is decided here: a session JWT (SessionAuth: signature, expiry, the agent
 * existing and enabled, strict mode's token state) or, where the entry point takes one, an API
 * token (ApiTokenAuth: verified once, then revocation and expiry on every request).
 */
export interface Authenticators {
  sessionAuth: SessionAuth;
  apiTokenAuth: ApiTokenAuth;
  /** OAuth access tokens at a protected resource (core/oauth/oauth.service.ts: the OAuth feature builds on this one, so the port is declared here). */
  oauth: { authenticate(accessToken: string, resource: string): Promise<Principal & { tokenId: string }> };
}

export interface CredentialOptions {
  /** The entry point accepts an API token as the credential itself (`/mcp`), not only a session JWT. */
  apiToken?: boolean;
  /** A session JWT's agent and token state are read, not taken from the per-node cache. */
  fresh?: boolean;
  /**
   * The entry point is an OAuth protected resource (`/mcp`, docs/oauth.md): an OAuth access token
   * for it is accepted. Everywhere else one is no JWT, and refused as an invalid one.
   */
  oauthResource?: string;
}

/** An OAuth access token (opaque) is told from a JWT by having no dots, from an API token by its form. */
const looksLikeAccessToken = (credential: string): boolean => !credential.includes('.') && !looksLikeApiToken(credential);

/** The principal of one credential, or UNAUTHENTICATED saying why (missing, invalid, expired, revoked, disabled). */
export async function authenticateCredential(auth: Authenticators, credential: string, options: CredentialOptions = {}): Promise<SessionPrincipal> {
  if (looksLikeApiToken(credential)) {
    if (options.apiToken !== true) throw unauthenticated('An API token cannot be used here; exchange it at POST /api/v1/sessions');
    return auth.apiTokenAuth.authenticate(credential);
  }
  if (options.oauthResource !== undefined && looksLikeAccessToken(credential)) {
    // An access token's expiry is its record's: `exp` is the JWT session's field, unused here.
    return { ...(await auth.oauth.authenticate(credential, options.oauthResource)), exp: 0 };
  }
  return auth.sessionAuth.authenticate(credential, { fresh: options.fresh === true });
}

/**
 * Whether deciding this credential would pay an Argon2id hash (an API token whose verification is
 * not cached on this node): the caller admits it per IP first, as it admits an exchange.
 */
export const costsHash = (auth: Authenticators, credential: string, options: CredentialOptions = {}): boolean =>
  options.apiToken === true && looksLikeApiToken(credential) && !auth.apiTokenAuth.isVerified(credential);

/**
 * The first of several candidate credentials that authenticates (a WebSocket handshake may carry
 * an old token in its URL and a fresh one in `auth`); UNAUTHENTICATED with `missing` when there is
 * none, or the last refusal. Storage errors propagate at once.
 */
export async function authenticateFirst(auth: Authenticators, credentials: readonly string[], missing: string, options: CredentialOptions = {}): Promise<Principal> {
  if (credentials.length === 0) throw unauthenticated(missing);
  let failure: unknown;
  for (const credential of credentials) {
    try {
      const { exp: _exp, ...principal } = await authenticateCredential(auth, credential, options);
      return principal;
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'UNAUTHENTICATED')) throw err;
      failure = err;
    }
  }
  throw failure;
}

/**
 * Open mode's temporary credential of `POST /rooms` (README.md, Endpoints): an `X-Agent-Id` header naming
 * an existing, enabled agent, who acts with its own role. Strict mode never accepts it (the route
 * does not ask). UNAUTHENTICATED otherwise.
 */
export async function authenticateAgentIdHeader(agents: Pick<AgentsService, 'get'>, value: string): Promise<Principal> {
  if (!isUuid(value)) throw unauthenticated('X-Agent-Id must name an existing agent');
  const agent = await agents.get(value.toLowerCase());
  if (!agent) throw unauthenticated('X-Agent-Id must name an existing agent');
  if (agent.disabledAt !== null) throw unauthenticated(AGENT_DISABLED);
  return { agentId: agent.id, role: agent.role };
}
