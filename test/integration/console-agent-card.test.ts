import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';

// The console's Directory shows each agent's card (docs/console.md): its description, its skills
// and the address other agents reach it at over A2A, as PATCH /api/v1/agents/:id set them.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: an agent\'s card in the directory', () => {
  const t = useTestServer();
  let browser: Browser;
  let context: BrowserContext | undefined;
  let viewer: TestAgent;
  let reviewer: TestAgent;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    viewer = await newAgent(t.api);
    reviewer = await newAgent(t.api);
  }, 180_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
  });

  it('shows the description, the skills with their tags, and the A2A address', { timeout: 60_000 }, async () => {
    const patched = await t.api.request('PATCH', `/api/v1/agents/${reviewer.id}`, {
      jwt: reviewer.jwt,
      body: { displayName: 'Patch Reviewer', description: 'Reviews <b>patches</b> for style', skills: [{ id: 'review', name: 'Code review', description: 'Reads a diff', tags: ['code', 'style'] }] },
    });
    expect(patched.status).toBe(200);
    const opened = await openConsole(browser, t.server.url, viewer.apiToken);
    context = opened.context;
    const page = opened.page;
    await page.getByRole('link', { name: 'Directory', exact: true }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Patch Reviewer', exact: true }) });
    await row.getByText('Card of Patch Reviewer').click();
    // Text, never markup.
    await row.getByText('Reviews <b>patches</b> for style').waitFor();
    const skills = row.getByRole('list', { name: 'Skills of Patch Reviewer' });
    expect(await skills.innerText()).toContain('Code review: Reads a diff (code, style)');
    expect(await row.innerText()).toContain(`/a2a/${reviewer.name}`);
    expect(opened.errors).toEqual([]);
  });
});
