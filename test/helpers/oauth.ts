import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** An MCP client's OAuth state kept in memory, as the SDK's client asks for it (docs/oauth.md). */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** The authorization URL the SDK sent the person to, last. */
  authorizationUrl: URL | null = null;

  constructor(readonly redirect: string, readonly name = 'Test MCP client', readonly scope?: string) {}

  get redirectUrl(): string {
    return this.redirect;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope === undefined ? {} : { scope: this.scope }),
    };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

/** A browser's cookies, by name, for the plain HTTP walk through the consent page. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(res: Response): void {
    for (const header of res.headers.getSetCookie()) {
      const pair = header.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(header) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export interface PageStep {
  status: number;
  location: string | null;
  html: string;
}

/** One request of the walk: no redirect followed, cookies kept. */
export async function browse(jar: CookieJar, url: string, form?: Record<string, string>): Promise<PageStep> {
  const res = await fetch(url, {
    method: form === undefined ? 'GET' : 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
    body: form === undefined ? undefined : new URLSearchParams(form).toString(),
  });
  jar.take(res);
  const location = res.headers.get('location');
  return { status: res.status, location: location === null ? null : new URL(location, url).href, html: await res.text() };
}

/**
 * A person approving (or denying) in a browser: the authorization URL, the sign-in page (API token),
 * the consent page, then redirects until one leaves the service. Returns the consent page's HTML and
 * the URL the client is sent back to.
 */
export async function approve(authorizationUrl: string | URL, apiToken: string, choice: 'allow' | 'deny' = 'allow'): Promise<{ consent: string; callback: URL }> {
  const jar = new CookieJar();
  let step = await browse(jar, String(authorizationUrl));
  if (step.location === null) throw new Error(`expected a redirect to the sign-in page, got ${step.status}: ${step.html.slice(0, 300)}`);
  const interaction = step.location;
  step = await browse(jar, interaction);
  if (!step.html.includes('API token')) throw new Error(`expected the sign-in page, got ${step.status}: ${step.html.slice(0, 300)}`);
  const consent = await browse(jar, interaction, { action: 'sign-in', api_token: apiToken });
  if (consent.status !== 200) throw new Error(`sign-in refused (${consent.status}): ${consent.html.slice(0, 500)}`);
  step = await browse(jar, interaction, { action: choice });
  const origin = new URL(interaction).origin;
  while (step.location !== null && new URL(step.location).origin === origin) step = await browse(jar, step.location);
  if (step.location === null) throw new Error(`expected a redirect back to the client, got ${step.status}: ${step.html.slice(0, 500)}`);
  return { consent: consent.html, callback: new URL(step.location) };
}
