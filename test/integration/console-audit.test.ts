import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { chromiumAccessibility, collectPageErrors, DESKTOP, inViewport, launchBrowser, PHONE, scrollPage, sidewaysOverflow } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's Audit view (docs/console.md) in headless Chromium, by the accessible names of the
// contract: the navigation link Audit (admins only), the records newest first, the Event field,
// subjects and details by name, session records (jwt-issued) behind Show session records; at phone width.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

interface Row { time: string; event: string; actor: string; subject: string; detail: string }

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

  async function open(agent: TestAgent, viewport = DESKTOP): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport });
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
    // The detail's names and values as "name: value; ..." (its dt/dd pairs).
    const detail = [...tr.children[4]!.querySelectorAll('dt')].map((dt) => `${dt.textContent}: ${dt.nextElementSibling?.textContent ?? ''}`).join('; ');
    const cells = [...tr.children].map((c) => c.textContent ?? '');
    return { time: tr.querySelector('time')?.getAttribute('datetime') ?? '', event: cells[1]!, actor: cells[2]!, subject: cells[3]!, detail };
  }));

  it('admins get Audit: records newest first with names, and Event filters them', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person]);
    const { page, errors } = await open(admin);
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('heading', { name: 'Audit' }).waitFor();
    await page.getByRole('table').waitFor();

    const expected = (await t.api.get('/api/v1/audit?limit=100', { jwt: admin.jwt })).body.records as { id: string; event: string; createdAt: string }[];
    const shown = await rows(page);
    // At least the records up to the page's load, in the service's order, session records left out.
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.map((r) => r.time)).toEqual(expected.filter((r) => r.event !== 'jwt-issued').slice(0, shown.length).map((r) => r.createdAt));
    expect(expected.some((r) => r.event === 'jwt-issued')).toBe(true);
    expect(shown.some((r) => r.event === 'jwt-issued')).toBe(false);
    // Subjects by name: the room by its name.
    const created = shown.find((r) => r.event === 'room-created' && r.subject === room.name);
    expect(created?.actor).toBe(`Test ${admin.name}`);
    expect(created?.detail).toContain('slug: ');
    expect(await page.getByRole('cell', { name: room.id }).count()).toBe(0);
    // Session records are one check away.
    await page.getByRole('checkbox', { name: 'Show session records (jwt-issued)' }).check();
    await waitUntil('session records shown', async () => (await rows(page)).some((r) => r.event === 'jwt-issued' && r.subject === `Test ${admin.name}`));
    await page.getByRole('checkbox', { name: 'Show session records (jwt-issued)' }).uncheck();
    await waitUntil('session records hidden again', async () => !(await rows(page)).some((r) => r.event === 'jwt-issued'));

    await page.getByLabel('Event').fill('agent-created');
    await waitUntil('only agent-created records', async () => {
      const filtered = await rows(page);
      return filtered.length > 0 && filtered.every((r) => r.event === 'agent-created');
    });
    const filtered = await rows(page);
    // Agents by display name: the subject of each is the agent created.
    expect(filtered.map((r) => r.subject)).toContain(`Test ${person.name}`);
    expect(filtered.map((r) => r.subject)).toContain(`Test ${admin.name}`);
    // Asked for by name, session records show without the check.
    await page.getByLabel('Event').fill('jwt-issued');
    await waitUntil('only jwt-issued records', async () => {
      const filtered = await rows(page);
      return filtered.length > 0 && filtered.every((r) => r.event === 'jwt-issued');
    });
    await page.getByLabel('Event').fill('no-such-event');
    await page.getByText('No records').waitFor();
    // Nothing failed but the page's icon, which the console does not have.
    expect(errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
  });

  it('at phone width: each record readable on screen, tasks and tokens by name, details as names and values', { timeout: 60_000 }, async () => {
    const task = await t.api.post('/api/v1/tasks', { assignee: person.id, title: 'Audit me, by title' }, { jwt: admin.jwt });
    expect(task.status).toBe(201);
    const issued = await t.api.post(`/api/v1/agents/${person.id}/tokens`, { scopes: {} }, { jwt: admin.jwt });
    expect(issued.status).toBe(201);
    const { page, errors } = await open(admin, PHONE);
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('table').waitFor();
    // The task by its title, its assignee in the detail by name.
    await waitUntil('the task named', async () => (await rows(page)).some((r) => r.event === 'task-created' && r.subject === 'Audit me, by title'));
    const taskRow = (await rows(page)).find((r) => r.event === 'task-created')!;
    expect(taskRow.detail).toContain(`assignee: Test ${person.name}`);
    expect(taskRow.detail).toContain('kind: task');
    expect(taskRow.detail).not.toContain('{');
    const tokenRow = (await rows(page)).find((r) => r.event === 'token-issued' && r.subject.includes(issued.body.prefix as string))!;
    expect(tokenRow.subject).toBe(`token ${issued.body.prefix as string} of Test ${person.name}`);
    // Readable: nothing wider than the screen, the newest record's cells on screen and still cells of a table.
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    const first = page.getByRole('row').nth(1);
    for (const cell of await first.getByRole('cell').all()) expect(await inViewport(cell)).toBe(true);
    expect(await first.getByRole('cell').count()).toBe(4);
    // As Chromium exposes them under the phone layout's CSS: still a table's row and cells.
    expect((await chromiumAccessibility(first)).role).toBe('row');
    expect((await chromiumAccessibility(first.getByRole('cell').first())).role).toBe('cell');
    expect((await chromiumAccessibility(first.getByRole('rowheader'))).role).toBe('rowheader');
    // The navigation stays on screen while the log scrolls.
    expect(await scrollPage(page, 'end')).toBeGreaterThan(0);
    expect(await inViewport(page.getByRole('link', { name: 'Rooms', exact: true }))).toBe(true);
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
