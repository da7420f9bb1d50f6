import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's room side panel (docs/console.md): on a queue room, the queue's unclaimed tasks,
// live, each with a button Claim (docs/tasks.md, Queues); its Leases (docs/leases.md).
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: a room\'s queue and leases', () => {
  const t = useTestServer();
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let requester: TestAgent;
  let person: TestAgent;
  let roomId: string;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    const admin = await newAdmin(t.api);
    [requester, person] = [await newAgent(t.api), await newAgent(t.api)];
    roomId = (await newRoom(t.api, admin, [requester, person])).id;
  }, 180_000);
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function openRoom(agent: TestAgent): Promise<{ page: Page; errors: string[] }> {
    const { context, page, errors } = await openConsole(browser, t.server.url, agent.apiToken, `#/rooms/${roomId}`);
    contexts.push(context);
    await page.getByRole('heading', { name: 'Online', exact: true }).waitFor();
    return { page, errors };
  }
  const enqueue = async (title: string): Promise<string> => {
    const res = await t.api.post('/api/v1/tasks', { queue: roomId, title }, { jwt: requester.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };

  it('lists the unclaimed tasks live; Claim makes one the signed-in agent\'s', async () => {
    const first = await enqueue('Translate the release notes');
    const { page, errors } = await openRoom(person);
    const queue = page.getByRole('complementary').filter({ has: page.getByRole('heading', { name: 'Queue', exact: true }) });
    await queue.getByText('Translate the release notes', { exact: true }).waitFor();
    // A task put in the queue while the room is open appears without a reload.
    await enqueue('Check the links');
    await queue.getByText('Check the links', { exact: true }).waitFor();

    await queue.getByRole('button', { name: 'Claim Translate the release notes' }).click();
    await queue.getByRole('status').getByText(/Claimed: Translate the release notes/).waitFor();
    await waitUntil('the claim is stored', async () => (await t.api.get(`/api/v1/tasks/${first}`, { jwt: requester.jwt })).body.assigneeId === person.id);
    expect(await queue.getByText('Translate the release notes', { exact: true }).count()).toBe(0);

    // Claimed by someone else meanwhile: it leaves the list live.
    const third = await enqueue('Rotate the keys');
    await queue.getByText('Rotate the keys', { exact: true }).waitFor();
    const other = await newAgent(t.api);
    await t.api.post(`/rooms/${roomId}/members`, { agentId: other.id }, { headers: { 'x-agent-id': (await newAdmin(t.api)).id } });
    expect((await t.api.post(`/api/v1/tasks/${third}/claim`, {}, { jwt: other.jwt })).status).toBe(200);
    await queue.getByText('Rotate the keys', { exact: true }).waitFor({ state: 'detached' });
    expect(errors).toEqual([]);
  });

  it('lists the room\'s leases (resource, holder, expiry), live as they are granted and released', async () => {
    const { page, errors } = await openRoom(person);
    const leases = page.getByRole('complementary').filter({ has: page.getByRole('heading', { name: 'Leases', exact: true }) });
    await leases.getByText('No leases.').waitFor();
    const granted = await t.api.post(`/api/v1/rooms/${roomId}/leases`, { resource: 'docs/guide.md', ttlSeconds: 600 }, { jwt: requester.jwt });
    expect(granted.status).toBe(201);
    const item = leases.getByRole('listitem', { name: 'docs/guide.md' });
    await item.waitFor();
    expect(await item.locator('time').getAttribute('datetime')).toBe(granted.body.expiresAt);
    expect(await item.textContent()).toMatch(new RegExp(`${requester.name}|${requester.id}`));
    expect((await t.api.delete(`/api/v1/rooms/${roomId}/leases/${granted.body.id as string}`, { jwt: requester.jwt })).status).toBe(204);
    await item.waitFor({ state: 'detached' });
    expect(errors).toEqual([]);
  });
});
