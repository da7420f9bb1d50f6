import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';

// The console's streamed messages (docs/streaming.md) in headless Chromium: a growing message in
// place marked "streaming", an interrupted one marked "interrupted".
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: streamed messages', () => {
  const t = useTestServer({ config: { streamIdleSeconds: 2 } });
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

  it('shows a growing message in place marked streaming, then interrupted when it stops', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    const opened = await openConsole(browser, t.server.url, person.apiToken, `#/rooms/${room.id}`);
    context = opened.context;
    const { page, errors } = opened;
    await page.getByRole('log').waitFor();
    const started = await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'Thinking', streaming: true }, { jwt: bot.jwt });
    const item = page.getByRole('log').getByRole('listitem').filter({ hasText: 'Thinking' });
    await item.getByText('streaming', { exact: true }).waitFor();
    await t.api.post(`/api/v1/rooms/${room.id}/messages/${started.body.id as string}/append`, { text: ' about the answer' }, { jwt: bot.jwt });
    await item.filter({ hasText: 'Thinking about the answer' }).getByText('streaming', { exact: true }).waitFor();
    expect(await page.getByRole('log').getByRole('listitem').filter({ hasText: 'Thinking' }).count()).toBe(1);
    // No more appends: the service ends it interrupted after STREAM_IDLE_SECONDS.
    await item.getByText('interrupted', { exact: true }).waitFor({ timeout: 15_000 });
    expect(await item.getByText('streaming', { exact: true }).count()).toBe(0);
    expect(errors).toEqual([]);
  });
});
