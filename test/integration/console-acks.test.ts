import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's importance and acknowledgements (docs/console.md) in headless Chromium: a message's
// importance in words when not normal; Acknowledge on a message awaiting the signed-in agent's
// acknowledgement; "N of M acknowledged" on the agent's own message that asks for them, kept current.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: importance and acknowledgements', () => {
  const t = useTestServer();
  let browser: Browser;
  let context: BrowserContext | undefined;
  let admin: TestAgent;
  let person: TestAgent;
  let bot: TestAgent;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    admin = await newAdmin(t.api);
    [person, bot] = await Promise.all([newAgent(t.api), newAgent(t.api)]);
  }, 180_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
  });

  async function open(agent: TestAgent, roomId: string): Promise<{ page: Page; errors: string[] }> {
    await context?.close();
    const opened = await openConsole(browser, t.server.url, agent.apiToken, `#/rooms/${roomId}`);
    context = opened.context;
    return opened;
  }
  const send = async (agent: TestAgent, roomId: string, body: Record<string, unknown>): Promise<string> => {
    const res = await t.api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };

  it('shows importance in words, Acknowledge on what awaits the agent, and the count on its own', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    await send(bot, room.id, { body: 'routine note' });
    await send(bot, room.id, { body: 'the server is down', importance: 'urgent' });
    const asked = await send(bot, room.id, { body: 'please confirm the deploy', importance: 'high', ackRequired: true, mentions: [person.id] });
    const { page, errors } = await open(person, room.id);
    const log = page.getByRole('log');
    const urgent = log.getByRole('listitem').filter({ hasText: 'the server is down' });
    await urgent.getByText('urgent', { exact: true }).waitFor();
    const routine = log.getByRole('listitem').filter({ hasText: 'routine note' });
    expect(await routine.getByText('normal', { exact: true }).count()).toBe(0);
    const item = log.getByRole('listitem').filter({ hasText: 'please confirm the deploy' });
    await item.getByText('high', { exact: true }).waitFor();
    // Not awaited from anyone else: no button on the urgent one.
    expect(await urgent.getByRole('button', { name: 'Acknowledge' }).count()).toBe(0);
    await item.getByRole('button', { name: 'Acknowledge' }).click();
    await item.getByRole('button', { name: 'Acknowledge' }).waitFor({ state: 'detached' });
    const listing = await t.api.get(`/api/v1/rooms/${room.id}/messages/${asked}/acks`, { jwt: bot.jwt });
    expect(listing.body).toMatchObject({ acked: [{ agentId: person.id }], pending: [] });
    expect(errors).toEqual([]);

    // The sender's side: "0 of 2 acknowledged", counting up as the others acknowledge.
    const own = await send(person, room.id, { body: 'everyone, read the runbook', ackRequired: true });
    const mine = await open(person, room.id);
    const ownItem = mine.page.getByRole('log').getByRole('listitem').filter({ hasText: 'everyone, read the runbook' });
    await ownItem.getByText('0 of 2 acknowledged').waitFor();
    expect(await ownItem.getByRole('button', { name: 'Acknowledge' }).count()).toBe(0);
    expect((await t.api.post(`/api/v1/rooms/${room.id}/messages/${own}/ack`, {}, { jwt: bot.jwt })).status).toBe(200);
    await ownItem.getByText('1 of 2 acknowledged').waitFor();
    await waitUntil('no console errors', () => mine.errors.length === 0);
  });
});
