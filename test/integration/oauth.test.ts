import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHash, randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type Api, type TestAgent } from '../helpers/api.js';
import { approve, browse, CookieJar, MemoryOAuthProvider } from '../helpers/oauth.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { connect as connectWs, expectAuthFailed } from '../helpers/ws.js';

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

const RESOURCE = (url: string): string => `${url}/mcp`;

/** The raw flow up to the code: registration, authorization (PKCE S256, resource), consent. */
async function codeFor(url: string, apiToken: string, options: { scope?: string; clientId?: string } = {}): Promise<{ clientId: string; code: string; verifier: string; consent: string }> {
  const clientId = options.clientId ?? String((await register(url)).body.client_id);
  const { verifier, challenge } = pkce();
  const { consent, callback } = await approve(authorizeUrl(url, {
    client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256',
    resource: RESOURCE(url), state: 'st', scope: options.scope,
  }), apiToken);
  expect(callback.searchParams.get('iss')).toBe(url);
  expect(callback.searchParams.get('state')).toBe('st');
  return { clientId, code: callback.searchParams.get('code')!, verifier, consent };
}

/** Tokens for the agent's API token, by the raw flow. */
async function tokensFor(url: string, apiToken: string, scope?: string): Promise<{ clientId: string; access: string; refresh: string; scope: string }> {
  const { clientId, code, verifier } = await codeFor(url, apiToken, scope === undefined ? {} : { scope });
  const res = await token(url, { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier, redirect_uri: REDIRECT, resource: RESOURCE(url) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { clientId, access: String(res.body.access_token), refresh: String(res.body.refresh_token), scope: String(res.body.scope) };
}

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

async function rawMcp(url: string, bearer: string, message: unknown = INITIALIZE): Promise<Response> {
  return fetch(`${url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}` }, body: JSON.stringify(message) });
}

const toolCall = (name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } });

async function scopedApiToken(api: Api, admin: TestAgent, agentId: string, scopes: Record<string, unknown>): Promise<string> {
  const res = await api.post(`/api/v1/agents/${agentId}/tokens`, { scopes }, { jwt: admin.jwt });
  expect(res.status).toBe(201);
  return res.body.token as string;
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
      const body = (await res.json()) as { scopes_supported: string[] };
      expect(body).toMatchObject({ resource: `${t.server.url}/mcp`, authorization_servers: [t.server.url], bearer_methods_supported: ['header'] });
      expect(body.scopes_supported).toContain('messages:read');
    }
    const res = await fetch(`${t.server.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as Record<string, string[]>;
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

  it('connects the SDK client by URL: registration, consent, code, tool call, refresh rotation, reuse ends the grant', async () => {
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

    // The access token is refused (as an expired one is): the SDK refreshes, and the refresh token rotates.
    const firstRefresh = provider.saved!.refresh_token!;
    provider.saved = { ...provider.saved!, access_token: 'expired0access0token' };
    const again = await client.callTool({ name: 'whoami', arguments: {} });
    expect(again.isError).not.toBe(true);
    expect(provider.saved.refresh_token).toBeTruthy();
    expect(provider.saved.refresh_token).not.toBe(firstRefresh);
    // The old refresh token used again (a stolen copy): the whole grant ends, the client's tokens with it.
    const clientId = (provider.client as { client_id: string }).client_id;
    const reused = await token(t.server.url, { grant_type: 'refresh_token', client_id: clientId, refresh_token: firstRefresh, resource: RESOURCE(t.server.url) });
    expect(reused.body.error).toBe('invalid_grant');
    await waitUntil('the grant ended', async () => (await rawMcp(t.server.url, provider.saved!.access_token)).status === 401);
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow();
    await client.close();
  });

  it('refuses bad authorization requests: PKCE, resource, unknown client, unregistered redirect', async () => {
    const url = t.server.url;
    const clientId = String((await register(url)).body.client_id);
    const { challenge } = pkce();
    const base = { client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: RESOURCE(url), state: 's' };
    const errorOf = async (params: Record<string, string | undefined>): Promise<string | null> => {
      const step = await browse(new CookieJar(), authorizeUrl(url, params));
      expect(step.status, step.html.slice(0, 200)).toBeGreaterThanOrEqual(300);
      const location = new URL(step.location!);
      expect(location.origin + location.pathname).toBe(REDIRECT);
      return location.searchParams.get('error');
    };
    expect(await errorOf({ ...base, code_challenge: undefined, code_challenge_method: undefined })).toBe('invalid_request');
    expect(await errorOf({ ...base, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' })).toBe('invalid_request');
    expect(await errorOf({ ...base, resource: undefined })).toBe('invalid_target');
    expect(await errorOf({ ...base, resource: `${url}/api/v1` })).toBe('invalid_target');
    // An unknown client or an unregistered redirect: an error page, never a redirect.
    for (const params of [{ ...base, client_id: 'no-such-client' }, { ...base, redirect_uri: 'http://127.0.0.1:8976/elsewhere' }, { ...base, redirect_uri: 'https://evil.example/cb' }]) {
      const step = await browse(new CookieJar(), authorizeUrl(url, params));
      expect(step.status).toBe(400);
      expect(step.location).toBeNull();
      expect(step.html).toContain('Authorization error');
    }
    // A loopback redirect matches on any port (RFC 8252): this one reaches the sign-in page.
    const otherPort = await browse(new CookieJar(), authorizeUrl(url, { ...base, redirect_uri: 'http://127.0.0.1:5555/callback' }));
    expect(otherPort.location).toMatch(/\/oauth\/interaction\//);
    // Registration refuses http redirects to other hosts; https and private-use schemes are accepted.
    expect((await register(url, { redirect_uris: ['http://evil.example/cb'] })).status).toBe(400);
    expect((await register(url, { redirect_uris: ['https://app.example/cb', 'vscode://ams/cb', 'http://localhost/cb'] })).status).toBe(201);
  });

  it('checks the resource at the token request too, and PKCE', async () => {
    const url = t.server.url;
    const first = await codeFor(url, agent.apiToken);
    const wrong = await token(url, { grant_type: 'authorization_code', client_id: first.clientId, code: first.code, code_verifier: first.verifier, redirect_uri: REDIRECT, resource: `${url}/other` });
    expect(wrong.body.error).toBe('invalid_target');
    const second = await codeFor(url, agent.apiToken, { clientId: first.clientId });
    const badVerifier = await token(url, { grant_type: 'authorization_code', client_id: first.clientId, code: second.code, code_verifier: 'x'.repeat(43), redirect_uri: REDIRECT, resource: RESOURCE(url) });
    expect(badVerifier.body.error).toBe('invalid_grant');
  });

  it('Deny redirects with access_denied; a disabled agent cannot sign in', async () => {
    const url = t.server.url;
    const clientId = String((await register(url)).body.client_id);
    const { challenge } = pkce();
    const authorization = authorizeUrl(url, { client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: RESOURCE(url) });
    const denied = await approve(authorization, agent.apiToken, 'deny');
    expect(denied.callback.searchParams.get('error')).toBe('access_denied');

    const disabled = await newAgent(t.api);
    expect((await t.api.post(`/api/v1/agents/${disabled.id}/disable`, {}, { jwt: admin.jwt })).status).toBe(200);
    const jar = new CookieJar();
    const start = await browse(jar, authorization);
    const signIn = await browse(jar, start.location!, { action: 'sign-in', api_token: disabled.apiToken });
    expect(signIn.status).toBe(401);
    expect(signIn.html).toContain('This agent is disabled');
    expect(signIn.html).not.toContain('>Allow<');
  });

  it('grants what the API token allows: asked-for scopes beyond it are left out; admin only for admins; none asked: the defaults', async () => {
    const url = t.server.url;
    const readOnly = await scopedApiToken(t.api, admin, agent.id, { actions: ['messages:read', 'rooms:read'] });
    const narrowed = await tokensFor(url, readOnly, 'messages:read messages:write admin no-such-scope');
    expect(narrowed.scope).toBe('messages:read');
    const defaults = await tokensFor(url, agent.apiToken);
    expect(defaults.scope.split(' ')).toContain('messages:write');
    expect(defaults.scope.split(' ')).not.toContain('admin');
    expect((await tokensFor(url, agent.apiToken, 'admin rooms:read')).scope).toBe('rooms:read');
    expect((await tokensFor(url, admin.apiToken, 'admin rooms:read')).scope.split(' ').sort()).toEqual(['admin', 'rooms:read']);

    // A tool needing a scope the token lacks: 403 with an insufficient_scope challenge.
    const room = await newRoom(t.api, admin, [agent]);
    const refused = await rawMcp(url, narrowed.access, toolCall('send_message', { room: room.id, body: 'no' }));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="messages:write", resource_metadata="${url}/.well-known/oauth-protected-resource/mcp"`);
    const allowed = await rawMcp(url, narrowed.access, toolCall('read_messages', { room: room.id }));
    expect(allowed.status).toBe(200);
  });

  it('an access token works only at /mcp: 401 on REST, the WebSocket and A2A', async () => {
    const { access } = await tokensFor(t.server.url, agent.apiToken);
    expect((await rawMcp(t.server.url, access)).status).toBe(200);
    const rest = await fetch(`${t.server.url}/api/v1/inbox`, { headers: { authorization: `Bearer ${access}` } });
    expect(rest.status).toBe(401);
    const socket = connectWs(t.server.url, access);
    try {
      await expectAuthFailed(socket);
    } finally {
      socket.close();
    }
    const a2a = await fetch(`${t.server.url}/a2a/${agent.name}`, { method: 'POST', headers: { authorization: `Bearer ${access}`, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }) });
    expect(a2a.status).toBe(401);
  });

  it('rotates refresh tokens; a reused one ends the whole grant; revocation ends it too', async () => {
    const url = t.server.url;
    const first = await tokensFor(url, agent.apiToken);
    const refreshed = await token(url, { grant_type: 'refresh_token', client_id: first.clientId, refresh_token: first.refresh, resource: RESOURCE(url) });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(first.refresh);
    const access = String(refreshed.body.access_token);
    expect((await rawMcp(url, access)).status).toBe(200);
    // The old refresh token again: refused, and the grant ends (its newest tokens included).
    const reused = await token(url, { grant_type: 'refresh_token', client_id: first.clientId, refresh_token: first.refresh, resource: RESOURCE(url) });
    expect(reused.body.error).toBe('invalid_grant');
    await waitUntil('the grant ended', async () => (await rawMcp(url, access)).status === 401);
    const newest = await token(url, { grant_type: 'refresh_token', client_id: first.clientId, refresh_token: String(refreshed.body.refresh_token), resource: RESOURCE(url) });
    expect(newest.body.error).toBe('invalid_grant');

    // Revoking a refresh token (RFC 7009) ends its grant.
    const second = await tokensFor(url, agent.apiToken);
    const revoked = await fetch(`${url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: second.refresh, client_id: second.clientId }).toString() });
    expect(revoked.status).toBe(200);
    await waitUntil('the revoked grant ended', async () => (await rawMcp(url, second.access)).status === 401);
  });

  it('lists grants with the agent\'s tokens; revoking one ends its tokens and closes a held request', async () => {
    const url = t.server.url;
    const owner = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [owner]);
    const { access } = await tokensFor(url, owner.apiToken, 'messages:read rooms:read');
    expect((await rawMcp(url, access, toolCall('read_messages', { room: room.id }))).status).toBe(200);
    const listed = await t.api.get(`/api/v1/agents/${owner.id}/tokens`, { jwt: admin.jwt });
    const own = await t.api.get(`/api/v1/agents/${owner.id}/tokens?kind=oauth`, { jwt: owner.jwt });
    expect(own.status).toBe(200);
    expect(own.body.tokens.map((tk: { kind: string }) => tk.kind)).toEqual(["oauth"]);
    expect((await t.api.get(`/api/v1/agents/${owner.id}/tokens`, { jwt: owner.jwt })).status).toBe(403);
    expect((await t.api.get(`/api/v1/agents/${admin.id}/tokens?kind=oauth`, { jwt: owner.jwt })).status).toBe(403);
    expect(listed.status).toBe(200);
    const kinds = listed.body.tokens.map((tk: { kind: string }) => tk.kind);
    expect(kinds).toEqual(['api', 'oauth']);
    const grant = listed.body.tokens[1];
    expect(grant).toMatchObject({ kind: 'oauth', clientName: 'Raw client', scopes: { actions: ['messages:read', 'rooms:read'] }, revokedAt: null });
    expect(grant.lastUsedAt).not.toBeNull();
    expect(grant.prefix).toBeUndefined();

    // A held fetch_inbox closes at once when the grant is revoked.
    const held = rawMcp(url, access, toolCall('fetch_inbox', { wait_seconds: 20 })).then((r) => r.status, () => 'closed');
    await waitUntil('the request is live', () => t.server.app.ctx.liveOAuth['live'].size > 0);
    expect((await t.api.delete(`/api/v1/agents/${owner.id}/tokens/${grant.id}`, { jwt: owner.jwt })).status).toBe(204);
    expect(await held).toBe('closed');
    expect((await rawMcp(url, access)).status).toBe(401);
    const after = await t.api.get(`/api/v1/agents/${owner.id}/tokens`, { jwt: admin.jwt });
    expect(after.body.tokens[1].revokedAt).not.toBeNull();
    expect((await t.api.delete(`/api/v1/agents/${owner.id}/tokens/${grant.id}`, { jwt: owner.jwt })).status).toBe(404);
    for (const event of ['oauth-grant-created', 'oauth-grant-revoked']) {
      const audit = await t.api.get(`/api/v1/audit?event=${event}&subjectId=${grant.id}`, { jwt: admin.jwt });
      expect(audit.body.records, event).toHaveLength(1);
    }
    const registered = await t.api.get(`/api/v1/audit?event=oauth-client-registered&subjectId=${grant.clientId}`, { jwt: admin.jwt });
    expect(registered.body.records).toHaveLength(1);
    expect(registered.body.records[0].detail).toEqual({ clientName: 'Raw client' });
  });

  it('revoking the API token, or disabling the agent, ends its grants', async () => {
    const url = t.server.url;
    const owner = await newAgent(t.api);
    const issued = await t.api.post(`/api/v1/agents/${owner.id}/tokens`, {}, { jwt: admin.jwt });
    const viaToken = await tokensFor(url, issued.body.token);
    expect((await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`, { jwt: admin.jwt })).status).toBe(204);
    expect((await rawMcp(url, viaToken.access)).status).toBe(401);
    const refresh = await token(url, { grant_type: 'refresh_token', client_id: viaToken.clientId, refresh_token: viaToken.refresh, resource: RESOURCE(url) });
    expect(refresh.body.error).toBe('invalid_grant');

    const viaAgent = await tokensFor(url, owner.apiToken);
    expect((await t.api.post(`/api/v1/agents/${owner.id}/disable`, {}, { jwt: admin.jwt })).status).toBe(200);
    expect((await rawMcp(url, viaAgent.access)).status).toBe(401);
    expect((await t.api.post(`/api/v1/agents/${owner.id}/enable`, {}, { jwt: admin.jwt })).status).toBe(200);
    expect((await rawMcp(url, viaAgent.access)).status).toBe(401);
    const listed = await t.api.get(`/api/v1/agents/${owner.id}/tokens`, { jwt: admin.jwt });
    expect(listed.body.tokens.filter((tk: { kind: string; revokedAt: string | null }) => tk.kind === 'oauth' && tk.revokedAt !== null)).toHaveLength(2);
  });
});

describe('OAuth: Client ID Metadata Documents', () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } });
  const strictTargets = useTestServer();
  const DOCUMENT_URL = 'https://localhost:9443/oauth/client.json';
  const realFetch = globalThis.fetch;
  let served: { body: string; fetched: number } = { body: '', fetched: 0 };
  beforeAll(() => {
    // The metadata document's host, in this process: the server's fetch reaches it through the global fetch.
    globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const target = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (target === DOCUMENT_URL || target === 'https://localhost:9443/oauth/big.json') {
        served.fetched++;
        return new Response(served.body, { status: 200, headers: { 'content-type': 'application/json' } });
      }
      return realFetch(input, init);
    }) as typeof fetch;
    return () => {
      globalThis.fetch = realFetch;
    };
  });

  const authorization = (url: string) => authorizeUrl(url, {
    client_id: DOCUMENT_URL, response_type: 'code', redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: RESOURCE(url),
  });

  it('an https client_id names its client by the document it serves (fetched under the webhook address rules)', async () => {
    const agent = await newAgent(t.api);
    served = { body: JSON.stringify({ client_id: DOCUMENT_URL, client_name: 'Metadata Client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }), fetched: 0 };
    const { consent, callback } = await approve(authorization(t.server.url), agent.apiToken);
    expect(consent).toContain('Metadata Client');
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(served.fetched).toBeGreaterThan(0);
  });

  it('refuses a document on a private address unless WEBHOOK_ALLOW_PRIVATE_TARGETS, and one over 5 KB', async () => {
    served = { body: JSON.stringify({ client_id: DOCUMENT_URL, client_name: 'Private', redirect_uris: [REDIRECT] }), fetched: 0 };
    const refused = await browse(new CookieJar(), authorization(strictTargets.server.url));
    expect(refused.status).toBe(400);
    expect(refused.location).toBeNull();
    expect(served.fetched).toBe(0);

    const big = 'https://localhost:9443/oauth/big.json';
    served = { body: JSON.stringify({ client_id: big, client_name: 'x'.repeat(6000), redirect_uris: [REDIRECT] }), fetched: 0 };
    const tooLarge = await browse(new CookieJar(), authorizeUrl(t.server.url, {
      client_id: big, response_type: 'code', redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: RESOURCE(t.server.url),
    }));
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.location).toBeNull();
  });
});

describe('OAuth: rate limits', () => {
  const t = useTestServer({ config: { rateLimit: { anonPerMinute: 3, agentPerMinute: 600 } } });

  it('every OAuth endpoint counts against the anonymous per-IP budget: 429 once it is spent', async () => {
    const statuses: number[] = [];
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp', '/oauth/token', '/oauth/register']) {
      const res = await fetch(`${t.server.url}${path}`, { method: path.startsWith('/oauth/') ? 'POST' : 'GET', headers: { 'content-type': 'application/json' }, body: path.startsWith('/oauth/') ? '{}' : undefined });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 3).every((s) => s !== 429)).toBe(true);
    expect(statuses[3]).toBe(429);
  });
});
