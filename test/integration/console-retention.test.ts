import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's retention panel (docs/retention.md, docs/console.md): a group room's retention and
// legal hold, shown to admins and editable; not shown to other agents.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: retention and legal hold', () => {
  const t = useTestServer();
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
  }, 180_000);
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('an admin sees a room\'s retention and legal hold and changes them; an agent does not see them', { timeout: 60_000 }, async () => {
    const admin = await newAdmin(t.api);
    const alice = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [alice]);
    const roomState = async () => (await t.api.get('/api/v1/rooms', { jwt: admin.jwt })).body.rooms.find((r: { id: string }) => r.id === room.id) as { retentionDays: number | null; legalHold: boolean };

    const { context, page, errors } = await openConsole(browser, t.server.url, admin.apiToken, `#/rooms/${room.id}`);
    contexts.push(context);
    const summary = page.getByText('Retention: service default; legal hold off');
    await summary.click();
    const form = page.getByRole('form', { name: 'Retention' });
    await form.getByRole('spinbutton', { name: 'Retention (days)' }).fill('45');
    await form.getByRole('checkbox', { name: 'Legal hold' }).check();
    await form.getByRole('button', { name: 'Save retention' }).click();
    await form.getByRole('status').getByText('Saved').waitFor();
    await page.getByText('Retention: 45 days; legal hold on').waitFor();
    await waitUntil('the room changed', async () => (await roomState()).legalHold);
    expect(await roomState()).toMatchObject({ retentionDays: 45, legalHold: true });

    // Emptied: the service's default again.
    await form.getByRole('spinbutton', { name: 'Retention (days)' }).fill('');
    await form.getByRole('button', { name: 'Save retention' }).click();
    await page.getByText('Retention: service default; legal hold on').waitFor();
    expect(errors).toEqual([]);

    const other = await openConsole(browser, t.server.url, alice.apiToken, `#/rooms/${room.id}`);
    contexts.push(other.context);
    await other.page.getByRole('heading', { name: room.name }).waitFor();
    expect(await other.page.getByText(/^Retention:/).count()).toBe(0);
  });
});
