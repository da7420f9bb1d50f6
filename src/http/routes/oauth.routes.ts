import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { AppContext } from '../../context.js';
import type { SignedIn } from '../../core/oauth/oauth.service.js';
import { SCOPE_ACTIONS } from '../../core/principal.js';
import { AppError } from '../../errors.js';
import { consentPage, errorPage, signInPage, type ClientView } from '../oauth/pages.js';
import { createOAuthProvider, INTERACTION_PATH, OAUTH_ROUTES } from '../oauth/provider.js';
import { allowAnyOrigin, answerPreflight, mcpResource } from '../../mcp/mcp.routes.js';

/**
 * OAuth 2.1 for MCP clients (docs/oauth.md): the discovery documents, the authorization server's
 * endpoints (`/oauth/*`, answered by oidc-provider on the raw request: it reads its own bodies) and
 * the page where a person signs in with an agent's API token and allows or denies the client.
 * Every route here is rate-limited as anonymous REST routes are (the auth hook, per IP).
 */

/** The consent form's body: a few short fields. */
const FORM_MAX_BYTES = 8 * 1024;

/** The protected resource's metadata (RFC 9728). */
export const protectedResourceMetadata = (ctx: AppContext): Record<string, unknown> => ({
  resource: mcpResource(ctx),
  authorization_servers: [ctx.publicUrl.value],
  scopes_supported: [...SCOPE_ACTIONS],
  bearer_methods_supported: ['header'],
});

async function readForm(raw: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of raw) {
    size += (chunk as Buffer).length;
    if (size > FORM_MAX_BYTES) throw new AppError('PAYLOAD_TOO_LARGE', `The form must be at most ${FORM_MAX_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

const requestedScopes = (scope: unknown): string[] | null =>
  (typeof scope === 'string' && scope.trim() !== '' ? scope.trim().split(/\s+/) : null);

function redirectHost(uri: unknown): string {
  const url = typeof uri === 'string' ? URL.parse(uri) : null;
  if (url === null) return '';
  return url.host !== '' ? url.host : `${url.protocol}${url.pathname}`;
}

export function oauthRoutes(app: FastifyInstance, ctx: AppContext): void {
  let provider: Provider | null = null;
  let callback: ((req: IncomingMessage, res: ServerResponse) => unknown) | null = null;
  // Built on first use: the issuer is PUBLIC_URL, or the address the server listens on.
  const oidc = (): Provider => (provider ??= createOAuthProvider(ctx));
  const handOver = (request: FastifyRequest, reply: FastifyReply, url?: string): void => {
    callback ??= oidc().callback() as unknown as typeof callback;
    void reply.hijack();
    if (url !== undefined) request.raw.url = url;
    void callback!(request.raw, reply.raw);
  };

  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    app.get(path, { schema: { hide: true } }, async (_request, reply) => {
      allowAnyOrigin(reply);
      return protectedResourceMetadata(ctx);
    });
    app.options(path, { schema: { hide: true } }, async (_request, reply) => answerPreflight(reply));
  }
  // RFC 8414's document and OpenID discovery's are the same, the library's (it answers CORS itself).
  app.route({
    method: ['GET', 'OPTIONS'],
    url: '/.well-known/oauth-authorization-server',
    schema: { hide: true },
    handler: async (request, reply) => handOver(request, reply, '/.well-known/openid-configuration'),
  });
  app.route({ method: ['GET', 'OPTIONS'], url: '/.well-known/openid-configuration', schema: { hide: true }, handler: async (request, reply) => handOver(request, reply) });

  void app.register(async (scope) => {
    // The library reads its requests' bodies itself (form or JSON, at most 56 KiB): left unread here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

    // The library's endpoints, each named (its CORS preflights included).
    const endpoints: [string, ('GET' | 'POST' | 'OPTIONS')[]][] = [
      [OAUTH_ROUTES.authorization, ['GET', 'POST']],
      [`${OAUTH_ROUTES.authorization}/:uid`, ['GET']],
      [OAUTH_ROUTES.token, ['POST', 'OPTIONS']],
      [OAUTH_ROUTES.registration, ['POST', 'OPTIONS']],
      [OAUTH_ROUTES.revocation, ['POST', 'OPTIONS']],
      [OAUTH_ROUTES.jwks, ['GET', 'OPTIONS']],
    ];
    for (const [url, method] of endpoints) {
      scope.route({ method, url, schema: { hide: true }, handler: async (request, reply) => handOver(request, reply) });
    }

    const interactionUrl = `${INTERACTION_PATH}/:uid`;

    const loadInteraction = async (request: FastifyRequest, reply: FastifyReply) => {
      try {
        const details = await oidc().interactionDetails(request.raw, reply.raw);
        const client = await oidc().Client.find(String(details.params.client_id));
        if (client === undefined) return null;
        const view: ClientView = { clientName: client.clientName ?? client.clientId, redirectHost: redirectHost(details.params.redirect_uri) };
        return { details, client, view, action: `${INTERACTION_PATH}/${details.uid}` };
      } catch {
        return null;
      }
    };

    const page = (reply: FastifyReply, status: number, html: string): FastifyReply => {
      // Framed nowhere (no clickjacking of the buttons), cached nowhere. No `form-action`: browsers
      // apply it to the redirects after Allow, which end at the client's redirect URI.
      void reply.header('X-Frame-Options', 'DENY').header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
      void reply.header('Cache-Control', 'no-store');
      return reply.status(status).type('text/html; charset=utf-8').send(html);
    };
    const expired = (reply: FastifyReply): FastifyReply =>
      page(reply, 400, errorPage('invalid_request', 'This authorization request is unknown or has expired: start again from the application.'));

    const signedInOf = (result: unknown): SignedIn | null => {
      const value = (result as { amsSignIn?: SignedIn } | undefined)?.amsSignIn;
      return value ?? null;
    };

    scope.get<{ Params: { uid: string } }>(interactionUrl, { schema: { hide: true } }, async (request, reply) => {
      const loaded = await loadInteraction(request, reply);
      if (loaded === null) return expired(reply);
      const signedIn = signedInOf(loaded.details.result);
      if (signedIn === null) return page(reply, 200, signInPage(loaded.action, loaded.view, null));
      return page(reply, 200, consentPage(loaded.action, loaded.view, signedIn.agentName, ctx.oauth.scopesFor(signedIn, requestedScopes(loaded.details.params.scope))));
    });

    scope.post<{ Params: { uid: string } }>(interactionUrl, { schema: { hide: true } }, async (request, reply) => {
      const form = await readForm(request.raw);
      const loaded = await loadInteraction(request, reply);
      if (loaded === null) return expired(reply);
      const { details, client, view, action } = loaded;
      const requested = requestedScopes(details.params.scope);
      const choice = form.get('action');

      if (choice === 'sign-in') {
        let signedIn: SignedIn;
        try {
          signedIn = await ctx.oauth.signIn(form.get('api_token') ?? '');
        } catch (err) {
          if (err instanceof AppError && err.code === 'UNAUTHENTICATED') return page(reply, 401, signInPage(action, view, err.message));
          throw err;
        }
        details.result = { ...details.result, amsSignIn: signedIn };
        await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
        return page(reply, 200, consentPage(action, view, signedIn.agentName, ctx.oauth.scopesFor(signedIn, requested)));
      }

      if (choice === 'deny') {
        void reply.hijack();
        await oidc().interactionFinished(request.raw, reply.raw, { error: 'access_denied', error_description: 'The person denied access' }, { mergeWithLastSubmission: false });
        return reply;
      }

      if (choice === 'allow') {
        const signedIn = signedInOf(details.result);
        if (signedIn === null) return page(reply, 400, signInPage(action, view, 'Sign in first'));
        const scopes = ctx.oauth.scopesFor(signedIn, requested);
        const resource = mcpResource(ctx);
        const grant = new (oidc().Grant)({ accountId: signedIn.agentId, clientId: client.clientId });
        if (scopes.length > 0) grant.addResourceScope(resource, scopes.join(' '));
        // What was asked for and is not granted is rejected, not asked again (docs/oauth.md, Scopes).
        const left = (requested ?? []).filter((s) => (SCOPE_ACTIONS as readonly string[]).includes(s) && !(scopes as readonly string[]).includes(s));
        if (left.length > 0) grant.rejectResourceScope(resource, left.join(' '));
        const oidcScopes = (requested ?? []).filter((s) => s === 'openid' || s === 'offline_access');
        if (oidcScopes.length > 0) grant.addOIDCScope(oidcScopes.join(' '));
        const grantId = await grant.save();
        await ctx.oauth.recordGrant({ grantId, signedIn, clientId: client.clientId, clientName: view.clientName, scopes });
        void reply.hijack();
        await oidc().interactionFinished(request.raw, reply.raw, { login: { accountId: signedIn.agentId }, consent: { grantId } }, { mergeWithLastSubmission: false });
        return reply;
      }
      return page(reply, 400, errorPage('invalid_request', 'Choose Sign in, Allow or Deny'));
    });
  });
}
