import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
// Before the library: it warns when loaded on Node.js 20 (runtime-check.ts).
import { restoreConsoleWarn } from './runtime-check.js';
import Provider, { errors, interactionPolicy, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { AppContext } from '../../context.js';
import { SCOPE_ACTIONS } from '../../core/principal.js';
import { createRecordAdapterClass } from '../../core/grants/oauth-records.store.js';
import { checkTarget } from '../../core/webhooks/ssrf-guard.js';
import { errorPage } from './pages.js';

restoreConsoleWarn();

/**
 * The OAuth 2.1 authorization server for MCP clients (docs/oauth.md), built on `oidc-provider`
 * (an OpenID-certified implementation): dynamic client registration, Client ID Metadata Documents,
 * the authorization code flow with PKCE (S256) and resource indicators, rotating refresh tokens,
 * revocation. What is ours: where records are stored (core/oauth), who signs in and what a grant
 * holds (core/oauth, through the consent page of oauth.routes.ts), and the rules below.
 */

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
} as const;

export const INTERACTION_PATH = '/oauth/interaction';
/** Refresh tokens live 30 days (each use gives a new one). */
const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
/** A Client ID Metadata Document is fetched within this time. */
const CLIENT_METADATA_TIMEOUT_MS = 5000;
/** What a token may hold when the client asks for no scope: every action but `admin`. */
export const DEFAULT_SCOPE = SCOPE_ACTIONS.filter((a) => a !== 'admin').join(' ');
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** Schemes never accepted as a native app's redirect. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'blob:', 'vbscript:', 'about:', 'ftp:', 'ws:', 'wss:']);

/** Why a redirect URI is not accepted at registration (docs/oauth.md, Redirect URIs), or null. */
export function redirectUriProblem(uri: string): string | null {
  const url = URL.parse(uri);
  if (url === null) return 'must be a URI';
  if (url.hash !== '' || uri.includes('#')) return 'must not contain a fragment';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? null : 'http is accepted only for loopback hosts (127.0.0.1, [::1], localhost)';
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `the ${url.protocol.slice(0, -1)} scheme is not accepted`;
  return null; // a native app's private-use scheme (com.example.app:/cb, vscode:, cursor:)
}

/** The URI without the port of an http loopback host, or null for any other URI. */
function withoutLoopbackPort(uri: string): string | null {
  const url = URL.parse(uri);
  if (url === null || url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname)) return null;
  url.port = '';
  return url.href;
}

/** Whether `uri` matches one registered: exactly, or an http loopback one on any port (RFC 8252). */
export function redirectUriMatches(uri: string, registered: readonly string[]): boolean {
  if (registered.includes(uri)) return true;
  const bare = withoutLoopbackPort(uri);
  return bare !== null && registered.some((r) => withoutLoopbackPort(r) === bare);
}

interface SchemaLike {
  redirect_uris?: string[];
  scope?: string;
  invalidate(message: string, code?: string): never;
}

/** The keys that sign the provider's cookies: the same on every node (derived from JWT_SECRET), else this process's own. */
function cookieKeys(ctx: AppContext): string[] {
  const secret = ctx.config.jwtSecret;
  return [secret === null ? randomBytes(32).toString('base64url') : createHash('sha256').update(`oauth-cookies:${secret}`).digest('base64url')];
}

export function createOAuthProvider(ctx: AppContext): Provider {
  const issuer = ctx.publicUrl.value;
  const resource = `${issuer}/mcp`;
  const RecordAdapter = createRecordAdapterClass(ctx.database.db, { liveGrant: (grantId) => ctx.oauth.isGrantLive(grantId) });

  // Every sign-in is asked for and every grant consented to on the service's page: no session or
  // earlier grant is reused silently (docs/oauth.md, Authorization).
  const policy = interactionPolicy.base();
  policy.get('login')!.checks.add(new interactionPolicy.Check('sign_in_each_time', 'every authorization signs in with an API token', (c) =>
    (c.oidc.result?.login ? interactionPolicy.Check.NO_NEED_TO_PROMPT : interactionPolicy.Check.REQUEST_PROMPT)), 0);
  policy.get('consent')!.checks.add(new interactionPolicy.Check('consent_each_time', 'every authorization is consented to', (c) =>
    (c.oidc.result?.consent ? interactionPolicy.Check.NO_NEED_TO_PROMPT : interactionPolicy.Check.REQUEST_PROMPT)), 0);

  const configuration: Configuration = {
    adapter: RecordAdapter,
    clients: [],
    clientAuthMethods: ['none'],
    clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', id_token_signed_response_alg: 'ES256' },
    responseTypes: ['code'],
    // The scope actions are the resource's (getResourceServerInfo), not OpenID scopes.
    scopes: ['openid', 'offline_access'],
    claims: { openid: ['sub'] },
    cookies: { keys: cookieKeys(ctx) },
    jwks: { keys: [{ ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' } as never] },
    routes: OAUTH_ROUTES,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      // Client ids are UUIDs: the audit log names a registered client as its subject.
      registration: { enabled: true, idFactory: () => uuidv7() },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        allowFetch: async (_c: KoaContextWithOIDC, clientId: string) =>
          (await checkTarget(clientId, { allowPrivate: ctx.config.webhooks.allowPrivateTargets })).ok,
      },
      resourceIndicators: {
        enabled: true,
        // `resource` is required: without one there is no token (RFC 8707, docs/oauth.md).
        defaultResource: () => {
          throw new errors.InvalidTarget(`the resource parameter is required: ${resource}`);
        },
        useGrantedResource: () => true,
        getResourceServerInfo: (_c, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget(`the only resource is ${resource}`);
          return { scope: SCOPE_ACTIONS.join(' '), audience: resource, accessTokenTTL: ctx.config.oauthAccessTokenTtlSeconds, accessTokenFormat: 'opaque' };
        },
      },
    },
    ttl: {
      AccessToken: ctx.config.oauthAccessTokenTtlSeconds,
      AuthorizationCode: 60,
      RefreshToken: REFRESH_TOKEN_TTL_SECONDS,
      Grant: REFRESH_TOKEN_TTL_SECONDS * 12,
      Interaction: 600,
      Session: 600,
    },
    rotateRefreshToken: true,
    issueRefreshToken: (_c, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: () => false,
    interactions: { url: (_c, interaction) => `${INTERACTION_PATH}/${interaction.uid}`, policy },
    findAccount: async (_c, sub) => {
      const agent = await ctx.agents.get(sub);
      if (agent === null || agent.disabledAt !== null) return undefined;
      return { accountId: sub, claims: () => ({ sub }) };
    },
    renderError: (c, out) => {
      c.type = 'html';
      c.body = errorPage(String(out.error), typeof out.error_description === 'string' ? out.error_description : '');
    },
    fetch: async (url, options) => {
      const check = await checkTarget(String(url), { allowPrivate: ctx.config.webhooks.allowPrivateTargets });
      if (!check.ok) throw new Error(`client_id URL refused: ${check.problem}`);
      const init = { ...options, signal: AbortSignal.timeout(CLIENT_METADATA_TIMEOUT_MS) } as RequestInit & { dispatcher?: unknown };
      // Private targets are allowed only as webhooks' are (WEBHOOK_ALLOW_PRIVATE_TARGETS): the library's
      // own guard refuses them always.
      if (ctx.config.webhooks.allowPrivateTargets) delete init.dispatcher;
      return fetch(url, init);
    },
    fetchResponseBodyLimits: { 'client_id metadata document': 5 * 1024 },
  };
  const provider = new Provider(issuer, configuration);
  provider.proxy = ctx.config.trustProxy !== false;

  // Redirect URIs (docs/oauth.md): https, an http loopback host, or a native app's private-use
  // scheme, whatever application_type the client names; loopback ones match on any port.
  const schema = (provider.Client as unknown as { Schema: { prototype: { redirectUris(this: SchemaLike, uris?: string[], label?: string): void; scopes(this: SchemaLike): void } } }).Schema;
  // A client's `scope` names the resource's actions (docs/oauth.md, Scopes): unknown ones are left out.
  const known = new Set<string>(['openid', 'offline_access', ...SCOPE_ACTIONS]);
  schema.prototype.scopes = function scopes(this: SchemaLike) {
    if (typeof this.scope !== 'string') return;
    const kept = [...new Set(this.scope.split(' '))].filter((s) => known.has(s));
    if (kept.length > 0) this.scope = kept.join(' ');
    else delete this.scope;
  };
  schema.prototype.redirectUris = function redirectUris(this: SchemaLike, uris = this.redirect_uris ?? [], label = 'redirect_uris') {
    for (const uri of uris) {
      const problem = redirectUriProblem(uri);
      if (problem !== null) this.invalidate(`${label}: ${uri} ${problem}`, 'invalid_redirect_uri');
    }
  };
  const clientPrototype = provider.Client.prototype as unknown as { redirectUris: string[]; redirectUriAllowed(uri: string): boolean };
  clientPrototype.redirectUriAllowed = function redirectUriAllowed(this: { redirectUris: string[] }, uri: string) {
    return redirectUriMatches(uri, this.redirectUris);
  };

  // A client that asks for no scope gets the agent's defaults (every action but admin).
  provider.use(async (c, next) => {
    if (c.path === OAUTH_ROUTES.authorization && (c.method === 'GET' || c.method === 'HEAD')) {
      const scope = c.query.scope;
      if (scope === undefined || (typeof scope === 'string' && scope.trim() === '')) c.query = { ...c.query, scope: DEFAULT_SCOPE };
    }
    await next();
    // The discovery document names the resource's scopes and S256 only (docs/oauth.md).
    if (c.path === '/.well-known/openid-configuration' && typeof c.body === 'object' && c.body !== null) {
      Object.assign(c.body, { scopes_supported: [...SCOPE_ACTIONS], code_challenge_methods_supported: ['S256'] });
    }
  });

  provider.on('registration_create.success', (_c, client) => {
    void ctx.oauth.clientRegistered(client.clientId, client.clientName ?? client.clientId).catch((err: unknown) => ctx.logger.warn({ err }, 'oauth audit failed'));
  });
  // The library ends a grant itself on a reused refresh token and on a revoked one.
  provider.on('grant.revoked', (c, grantId) => {
    const reason = c.oidc.route === 'revocation' ? 'refresh-token-revoked' : 'refresh-token-reused';
    void ctx.oauth.grantEnded(grantId, reason).catch((err: unknown) => ctx.logger.warn({ err }, 'oauth grant end failed'));
  });
  return provider;
}
