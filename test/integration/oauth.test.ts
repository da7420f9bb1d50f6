import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHash, randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { approve, browse, CookieJar, MemoryOAuthProvider } from '../helpers/oauth.js';
import { useTestServer } from '../helpers/suite.js';

// docs/oauth.md: an MCP client given only <PUBLIC_URL>/mcp registers, sends a person to the
// consent page, exchanges the code and calls tools; tokens rotate, revocation ends everything.

const REDIRECT = 'http://127.0.0.1:8976/callback';

/** Connects the SDK's client through the whole OAuth dance; returns the client, its provider and the consent page. */
async function connectWithOAuth(url: string, apiToken: string, provider = new MemoryOAuthProvider(REDIRECT)): Promise<{ client: Client; provider: MemoryOAuthProvider; consent: string }> {
  const first = new StreamableHTTPClientTransport(new URL('/mcp', url), { authProvider: provider });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl).not.toBeNull();
  const { consent, callback } = await approve(provider.authorizationUrl!, apiToken);
  const code = callback.searchParams.get('code');
  expect(code, callback.href).toBeTruthy();
  await first.finishAuth(code!);
  const connected = new Client({ name: 'oauth-test', version: '1.0.0' });
  await connected.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { authProvider: provider }));
  return { client: connected, provider, consent };
}

const pkce = (): { verifier: string; challenge: string } => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

async function register(url: string, body: Record<string, unknown> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Raw client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...body }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function authorizeUrl(url: string, params: Record<string, string | undefined>): string {
  const target = new URL('/oauth/authorize', url);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) target.searchParams.set(k, v);
  return target.href;
}

async function token(url: string, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('OAuth for MCP clients', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let agent: TestAgent;
  beforeAll(async () => {
    admin = await newAdmin(t.api);
    agent = await newAgent(t.api);
  });

  it('publishes the protected resource and authorization server metadata, with CORS', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await fetch(`${t.server.url}${path}`, { headers: { origin: 'https://app.example' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      const body = await res.json();
      expect(body).toMatchObject({ resource: `${t.server.url}/mcp`, authorization_servers: [t.server.url], bearer_methods_supported: ['header'] });
      expect(body.scopes_supported).toContain('messages:read');
    }
    const res = await fetch(`${t.server.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const meta = await res.json();
    expect(meta).toMatchObject({
      issuer: t.server.url,
      authorization_endpoint: `${t.server.url}/oauth/authorize`,
      token_endpoint: `${t.server.url}/oauth/token`,
      registration_endpoint: `${t.server.url}/oauth/register`,
      revocation_endpoint: `${t.server.url}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
    expect(meta.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(meta.token_endpoint_auth_methods_supported).toContain('none');
    expect(meta.scopes_supported).toContain('tasks:write');
  });

  it('challenges /mcp without credentials, with resource_metadata, and exposes the header to browsers', async () => {
    const res = await fetch(`${t.server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'https://app.example' }, body: '{}' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${t.server.url}/.well-known/oauth-protected-resource/mcp"`);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toMatch(/WWW-Authenticate/i);
    const invalid = await fetch(`${t.server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer abcdefghijklmnop' }, body: '{}' });
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", resource_metadata="/);
    const preflight = await fetch(`${t.server.url}/mcp`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('connects the SDK client by URL: registration, consent, code, tool call', async () => {
    const room = await newRoom(t.api, admin, [agent]);
    const { client, provider, consent } = await connectWithOAuth(t.server.url, agent.apiToken);
    expect(consent).toContain('Test MCP client');
    expect(consent).toContain('127.0.0.1:8976');
    expect(consent).toContain(agent.name);
    expect(consent).toContain('messages:read');
    expect(consent).not.toContain('<code>admin</code>');
    expect(consent).toMatch(/>Allow</);
    expect(consent).toMatch(/>Deny</);
    const result = await client.callTool({ name: 'send_message', arguments: { room: room.id, body: 'hello over OAuth' } });
    expect(result.isError, JSON.stringify(result)).not.toBe(true);
    expect(provider.saved?.refresh_token).toBeTruthy();
    await client.close();
  });
});
