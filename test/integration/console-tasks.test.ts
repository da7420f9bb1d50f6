import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { inViewport, launchBrowser, openConsole, PHONE, sidewaysOverflow } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's Tasks view (docs/console.md) in headless Chromium, by the accessible names of the
// contract: the link Tasks, the headings Assigned to me and Requested by me, each task's title and
// state live, the moves open to the signed-in side, and Approve / Deny / Comment on an approval;
// what a task asks (its text, data, files, due date), its open and finished tasks apart (lists Open
// and Finished), Fail and Reject in a danger style; a task's messages in the room with its title and state.
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

  async function openTasks(agent: TestAgent, viewport?: typeof PHONE): Promise<{ page: Page; errors: string[] }> {
    const { context, page, errors } = await openConsole(browser, t.server.url, agent.apiToken, '', viewport);
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

  it('on a phone: an approval shows its text, data, files and due date; finished tasks stand apart; Fail and Reject look dangerous; the room shows each task message\'s title and state', { timeout: 60_000 }, async () => {
    const uploaded = await fetch(`${t.server.url}/api/v1/files?name=release-notes.txt`, { method: 'POST', headers: { authorization: `Bearer ${bot.jwt}`, 'content-type': 'text/plain' }, body: 'what changes\n' });
    expect(uploaded.status).toBe(201);
    const file = await uploaded.json() as { id: string };
    const dueAt = new Date(Date.now() + 3_600_000).toISOString();
    const approval = await create(bot, person, {
      title: 'Ship release 7?', kind: 'approval', dueAt,
      input: { body: 'Release 7 moves the queue to the new cluster.', data: { release: 7, cluster: 'eu-2' }, attachments: [file.id] },
    });
    const chore = await create(bot, person, { title: 'Rotate the keys' });
    const { page, errors } = await openTasks(person, PHONE);
    const assigned = section(page, 'Assigned to me');
    const open = assigned.getByRole('list', { name: 'Open', exact: true });
    const finished = assigned.getByRole('list', { name: 'Finished', exact: true });
    const entry = open.getByRole('listitem', { name: 'Ship release 7?' });
    // What the person approves: the request's text, its data by name, its file, and when it is due.
    await entry.getByText('Release 7 moves the queue to the new cluster.').waitFor();
    // Each name beside its value; the order is the engine's (PostgreSQL's jsonb orders keys itself).
    const terms = await entry.getByRole('term').allTextContents();
    const definitions = await entry.getByRole('definition').allTextContents();
    expect(terms.map((term, i) => [term, definitions[i]]).sort()).toEqual([['cluster', 'eu-2'], ['release', '7']]);
    expect(definitions).toHaveLength(terms.length);
    await entry.getByRole('link', { name: 'release-notes.txt', exact: true }).waitFor();
    expect(await entry.locator('time').getAttribute('datetime')).toBe(dueAt);
    await entry.getByText(/^due /).waitFor();

    // Fail and Reject in a style of their own, not Complete's.
    const choreEntry = open.getByRole('listitem', { name: 'Rotate the keys' });
    const look = (name: string) => choreEntry.getByRole('button', { name, exact: true }).evaluate((el) => {
      const style = el.ownerDocument.defaultView!.getComputedStyle(el);
      return `${style.backgroundColor} ${style.color} ${style.borderColor}`;
    });
    const [complete, fail, reject, start] = [await look('Complete'), await look('Fail'), await look('Reject'), await look('Start')];
    expect(fail).toBe(reject);
    expect(fail).not.toBe(complete);
    expect(complete).toBe(start);

    // Decided: it leaves Open for Finished.
    await entry.getByRole('button', { name: 'Approve' }).click();
    const done = finished.getByRole('listitem', { name: 'Ship release 7?' });
    await done.getByText('completed', { exact: true }).waitFor();
    expect(await open.getByRole('listitem', { name: 'Ship release 7?' }).count()).toBe(0);
    expect(await open.getByRole('listitem', { name: 'Rotate the keys' }).count()).toBe(1);
    // A finished task's request is a click away.
    await done.getByRole('button', { name: 'Details' }).click();
    await done.getByText('Release 7 moves the queue to the new cluster.').waitFor();
    await choreEntry.getByRole('button', { name: 'Fail', exact: true }).click();
    await finished.getByRole('listitem', { name: 'Rotate the keys' }).getByText('failed', { exact: true }).waitFor();
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);

    // In the room, each message a task posted names the task and the state its move set.
    const { roomId } = await stateOf(bot, approval.id);
    expect((await stateOf(bot, chore.id)).roomId).toBe(roomId);
    await page.goto(`${t.server.url}/console/#/rooms/${roomId}`);
    const log = page.getByRole('log');
    const created = log.getByRole('listitem').filter({ hasText: 'Release 7 moves the queue' });
    const createdMark = created.getByRole('link', { name: 'Approval: Ship release 7?', exact: true });
    expect(await createdMark.getAttribute('href')).toBe('#/tasks');
    await created.getByText('submitted', { exact: true }).waitFor();
    const decided = log.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Approval: Ship release 7?', exact: true }) }).filter({ hasText: 'completed' });
    await decided.waitFor();
    await log.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Task: Rotate the keys', exact: true }) }).filter({ hasText: 'failed' }).waitFor();
    // An ordinary message has no task mark.
    await sendMessageAs(bot, roomId, 'just chatting');
    const plain = log.getByRole('listitem').filter({ hasText: 'just chatting' });
    await plain.waitFor();
    expect(await plain.getByRole('link', { name: /^(Task|Approval): / }).count()).toBe(0);
    expect(await inViewport(page.getByRole('link', { name: 'Tasks', exact: true }))).toBe(true);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  const sendMessageAs = async (agent: TestAgent, roomId: string, body: string) => {
    expect((await t.api.post(`/api/v1/rooms/${roomId}/messages`, { body }, { jwt: agent.jwt })).status).toBe(201);
  };
});
