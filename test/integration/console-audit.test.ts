import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { collectPageErrors, launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's Audit view (docs/console.md) in headless Chromium, by the accessible names of the
// contract: the navigation link Audit (admins only), the records newest first, the Event field.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

interface Row { time: string; event: string; actor: string; subject: string }

describe.skipIf(!hasChromium)('console: the audit log', () => {
  const t = useTestServer();
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let admin: TestAgent;
  let person: TestAgent;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    admin = await newAdmin(t.api);
    person = await newAgent(t.api);
  }, 180_000);
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function open(agent: TestAgent): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors = collectPageErrors(page);
    await page.goto(`${t.server.url}/console/`);
    await page.getByLabel('API token').fill(agent.apiToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Rooms', exact: true }).waitFor();
    return { page, errors };
  }

  /** The table's rows as text, in the order shown. */
  const rows = (page: Page): Promise<Row[]> => page.getByRole('table').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => {
    const cells = [...tr.children].map((c) => c.textContent ?? '');
    return { time: tr.querySelector('time')?.getAttribute('datetime') ?? '', event: cells[1]!, actor: cells[2]!, subject: cells[3]! };
  }));

  it('admins get Audit: records newest first with names, and Event filters them', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person]);
    const { page, errors } = await open(admin);
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('heading', { name: 'Audit' }).waitFor();
    await page.getByRole('table').waitFor();

    const expected = (await t.api.get('/api/v1/audit', { jwt: admin.jwt })).body.records as { id: string; event: string; createdAt: string }[];
    const shown = await rows(page);
    // At least the records up to the page's load, in the service's order.
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.map((r) => r.time)).toEqual(expected.slice(0, shown.length).map((r) => r.createdAt));
    const created = shown.find((r) => r.event === 'room-created' && r.subject === room.id);
    expect(created?.actor).toBe(`Test ${admin.name}`);

    await page.getByLabel('Event').fill('agent-created');
    await waitUntil('only agent-created records', async () => {
      const filtered = await rows(page);
      return filtered.length > 0 && filtered.every((r) => r.event === 'agent-created');
    });
    const filtered = await rows(page);
    // Agents by display name: the subject of each is the agent created.
    expect(filtered.map((r) => r.subject)).toContain(`Test ${person.name}`);
    expect(filtered.map((r) => r.subject)).toContain(`Test ${admin.name}`);
    await page.getByLabel('Event').fill('no-such-event');
    await page.getByText('No records').waitFor();
    // Nothing failed but the page's icon, which the console does not have.
    expect(errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
  });

  it('other agents have no Audit link, and #/audit shows them their rooms', { timeout: 60_000 }, async () => {
    const { page } = await open(person);
    expect(await page.getByRole('link', { name: 'Audit', exact: true }).count()).toBe(0);
    await page.goto(`${t.server.url}/console/#/audit`);
    await page.getByRole('link', { name: 'Rooms', exact: true }).waitFor();
    expect(await page.getByRole('heading', { name: 'Audit' }).count()).toBe(0);
  });
});
