import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's Tasks view (docs/console.md) in headless Chromium, by the accessible names of the
// contract: the link Tasks, the headings Assigned to me and Requested by me, each task's title and
// state live, the moves open to the signed-in side, and Approve / Deny / Comment on an approval.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: tasks and approvals', () => {
  const t = useTestServer();
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let person: TestAgent;
  let bot: TestAgent;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    person = await newAgent(t.api);
    bot = await newAgent(t.api);
  }, 180_000);
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function openTasks(agent: TestAgent): Promise<{ page: Page; errors: string[] }> {
    const { context, page, errors } = await openConsole(browser, t.server.url, agent.apiToken);
    contexts.push(context);
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.getByRole('heading', { name: 'Assigned to me' }).waitFor();
    return { page, errors };
  }
  const section = (page: Page, heading: string): Locator => page.getByRole('region', { name: heading });
  const item = (page: Page, heading: string, title: string): Locator => section(page, heading).getByRole('listitem', { name: title });
  const create = async (requester: TestAgent, assignee: TestAgent, body: Record<string, unknown>) => {
    const res = await t.api.post('/api/v1/tasks', { assignee: assignee.id, ...body }, { jwt: requester.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string };
  };
  const stateOf = async (requester: TestAgent, id: string) => (await t.api.get(`/api/v1/tasks/${id}`, { jwt: requester.jwt })).body as { state: string; result: { decision?: string } | null; history: { messageId: string }[]; roomId: string };

  it('an approval assigned to the person: Approve with a Comment completes it, the comment its message', { timeout: 60_000 }, async () => {
    const { page, errors } = await openTasks(person);
    // Created after the page opened: it arrives live (task:updated).
    const approval = await create(bot, person, { title: 'Deploy to production?', kind: 'approval' });
    const entry = item(page, 'Assigned to me', 'Deploy to production?');
    await entry.getByText('submitted', { exact: true }).waitFor();
    await entry.getByRole('textbox', { name: 'Comment' }).fill('Go ahead after 5pm');
    await entry.getByRole('button', { name: 'Approve' }).click();
    await entry.getByText('completed', { exact: true }).waitFor();
    await waitUntil('the approval completed', async () => (await stateOf(bot, approval.id)).state === 'completed');
    const after = await stateOf(bot, approval.id);
    expect(after.result?.decision).toBe('approved');
    const page2 = await t.api.get(`/api/v1/rooms/${after.roomId}/messages`, { jwt: bot.jwt });
    expect((page2.body.messages as { id: string; body: string }[]).find((m) => m.id === after.history[1]!.messageId)?.body).toBe('Go ahead after 5pm');
    // Decided: no more buttons.
    await expect(entry.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(0);

    const denied = await create(bot, person, { title: 'Delete the old logs?', kind: 'approval' });
    await item(page, 'Assigned to me', 'Delete the old logs?').getByRole('button', { name: 'Deny' }).click();
    await waitUntil('the approval denied', async () => (await stateOf(bot, denied.id)).result?.decision === 'denied');
    expect(errors).toEqual([]);
  });

  it('a task assigned to the person moves by its buttons; one it requested shows the assignee\'s moves live and can be canceled', { timeout: 60_000 }, async () => {
    const { page, errors } = await openTasks(person);
    const task = await create(bot, person, { title: 'Summarise the incident' });
    const entry = item(page, 'Assigned to me', 'Summarise the incident');
    await entry.getByRole('button', { name: 'Start' }).click();
    await entry.getByText('working', { exact: true }).waitFor();
    expect((await stateOf(bot, task.id)).state).toBe('working');
    await entry.getByRole('button', { name: 'Complete' }).click();
    await entry.getByText('completed', { exact: true }).waitFor();
    expect((await stateOf(bot, task.id)).state).toBe('completed');

    const mine = await create(person, bot, { title: 'Fetch the metrics' });
    const requested = item(page, 'Requested by me', 'Fetch the metrics');
    await requested.getByText('submitted', { exact: true }).waitFor();
    // The assignee's move reaches the page live.
    expect((await t.api.post(`/api/v1/tasks/${mine.id}/state`, { state: 'working' }, { jwt: bot.jwt })).status).toBe(200);
    await requested.getByText('working', { exact: true }).waitFor();
    await requested.getByRole('button', { name: 'Cancel' }).click();
    await requested.getByText('canceled', { exact: true }).waitFor();
    expect((await stateOf(person, mine.id)).state).toBe('canceled');
    expect(errors).toEqual([]);
  });
});
