import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { approve } from '../helpers/oauth.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's Connected apps (docs/console.md, docs/oauth.md): the link Connected apps lists the
// signed-in agent's grants to OAuth clients (name, scopes, created, last used), a Revoke button
// each, which ends the grant's access at once. The consent page itself, in the same browser.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

const REDIRECT = 'http://127.0.0.1:8976/callback';

describe.skipIf(!hasChromium)('console: connected apps', () => {
  const t = useTestServer();
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let person: TestAgent;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    person = await newAgent(t.api);
  }, 180_000);
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
  });

  it('lists a grant with its scopes and revokes it; the consent page works in a browser', { timeout: 60_000 }, async () => {
    const url = t.server.url;
    const registered = await fetch(`${url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Browser Inspector', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    });
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const authorize = new URL('/oauth/authorize', url);
    for (const [k, v] of Object.entries({
      client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, resource: `${url}/mcp`, scope: 'messages:read rooms:read',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256',
    })) authorize.searchParams.set(k, v);

    // The consent page in the browser: sign in with the API token, see what is asked, Allow.
    const consentContext = await browser.newContext();
    contexts.push(consentContext);
    const consent = await consentContext.newPage();
    let callback: string | null = null;
    await consent.route('http://127.0.0.1:8976/**', async (route) => {
      callback = route.request().url();
      await route.fulfill({ status: 200, body: 'done' });
    });
    await consent.goto(authorize.href);
    await consent.getByLabel('API token').fill(person.apiToken);
    await consent.getByRole('button', { name: 'Sign in' }).click();
    await consent.getByRole('button', { name: 'Allow' }).waitFor();
    expect(await consent.getByText('Browser Inspector').count()).toBeGreaterThan(0);
    expect(await consent.getByText('messages:read', { exact: true }).count()).toBe(1);
    await consent.getByRole('button', { name: 'Allow' }).click();
    await waitUntil('the client gets its code', () => callback !== null);
    expect(new URL(callback!).searchParams.get('code')).toBeTruthy();

    // A second grant, approved over plain HTTP, to see two listed.
    const second = new URL(authorize.href);
    second.searchParams.set('scope', 'tasks:read');
    await approve(second, person.apiToken);

    const { context, page, errors } = await openConsole(browser, url, person.apiToken, '');
    contexts.push(context);
    await page.getByRole('link', { name: 'Connected apps', exact: true }).click();
    await page.getByRole('heading', { name: 'Connected apps' }).waitFor();
    const rows = page.getByRole('row').filter({ hasText: 'Browser Inspector' });
    await rows.first().waitFor();
    expect(await rows.count()).toBe(2);
    expect(await page.getByRole('cell', { name: 'messages:read, rooms:read' }).count()).toBe(1);
    expect(await page.getByRole('cell', { name: 'tasks:read' }).count()).toBe(1);
    await page.getByRole('row').filter({ hasText: 'tasks:read' }).getByRole('button', { name: /Revoke/ }).click();
    await waitUntil('one grant left', async () => (await rows.count()) === 1);
    const listed = await t.api.get(`/api/v1/agents/${person.id}/tokens?kind=oauth`, { jwt: person.jwt });
    expect(listed.body.tokens.filter((g: { revokedAt: string | null }) => g.revokedAt !== null).map((g: { scopes: { actions: string[] } }) => g.scopes.actions)).toEqual([['tasks:read']]);
    expect(errors).toEqual([]);
  });
});
