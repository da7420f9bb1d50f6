import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { inViewport, isFocused, launchBrowser, openConsole, PHONE, scrollPage } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The console's threads, edits and deletions (docs/console.md) in headless Chromium, by the
// accessible names of the contract: Reply, Thread, Reply to thread, Send reply, "N replies",
// Edit, Edit message, Save, "edited", Delete, "deleted"; on a reply in the timeline, a link
// "reply to <author>: “<text>”" to its thread; at phone width, a thread opened in view with focus in it.
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

describe.skipIf(!hasChromium)('console: threads, edits and deletions', () => {
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

  async function open(agent: TestAgent, roomId: string, viewport?: typeof PHONE): Promise<{ page: Page; errors: string[] }> {
    await context?.close();
    const opened = await openConsole(browser, t.server.url, agent.apiToken, `#/rooms/${roomId}`, viewport);
    context = opened.context;
    return opened;
  }

  it('a reply to a thread offers @ suggestions that fill mentions, and carries an attached file', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    const root = await sendMessage(t.api, bot, room.id, 'who can check this file?');
    const { page, errors } = await open(person, room.id);
    const rootItem = page.getByRole('log').getByRole('listitem').filter({ hasText: 'who can check this file?' });
    await rootItem.getByRole('button', { name: 'Reply' }).click();
    const thread = page.getByRole('region', { name: 'Thread' });
    const box = thread.getByLabel('Reply to thread');
    await box.pressSequentially(`here @${bot.name.slice(0, 4)}`);
    const listbox = thread.getByRole('listbox', { name: 'Members to mention' });
    await listbox.getByRole('option').filter({ hasText: `@${bot.name}` }).click();
    await listbox.waitFor({ state: 'detached' });
    expect(await box.inputValue()).toBe(`here @${bot.name} `);
    await thread.getByLabel('Attach file to reply', { exact: true }).setInputFiles({ name: 'report.txt', mimeType: 'text/plain', buffer: Buffer.from('all good\n') });
    await thread.getByRole('button', { name: 'Send reply' }).click();
    const reply = thread.getByRole('listitem').filter({ hasText: 'here @' });
    await reply.getByRole('link', { name: 'report.txt', exact: true }).waitFor();
    const stored = await t.api.get(`/api/v1/rooms/${room.id}/messages/${root.id}/thread`, { jwt: bot.jwt });
    expect(stored.body.replies).toHaveLength(1);
    expect(stored.body.replies[0]).toMatchObject({ body: `here @${bot.name} `, mentions: [bot.id], replyTo: root.id, attachments: [{ name: 'report.txt', size: 9 }] });
    // The room's own box is untouched: no file waits there.
    expect(await page.getByLabel('Attach file', { exact: true }).inputValue()).toBe('');
    expect(errors).toEqual([]);
  });

  it('replies in a thread, counts replies, edits and deletes the agent\'s own messages', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    const root = await sendMessage(t.api, bot, room.id, 'question from the bot');
    const { page, errors } = await open(person, room.id);
    const log = page.getByRole('log');
    const rootItem = log.getByRole('listitem').filter({ hasText: 'question from the bot' });
    await rootItem.waitFor();
    // Another agent's message: Reply, but no Edit or Delete.
    expect(await rootItem.getByRole('button', { name: 'Edit' }).count()).toBe(0);
    await rootItem.getByRole('button', { name: 'Reply' }).click();
    const thread = page.getByRole('region', { name: 'Thread' });
    await thread.getByText('question from the bot').waitFor();
    await thread.getByLabel('Reply to thread').fill('an answer in the thread');
    await thread.getByRole('button', { name: 'Send reply' }).click();
    await thread.getByText('an answer in the thread').waitFor();
    await rootItem.getByText('1 reply', { exact: true }).waitFor();
    const stored = await t.api.get(`/api/v1/rooms/${room.id}/messages/${root.id}/thread`, { jwt: bot.jwt });
    expect(stored.body.replies.map((r: { body: string; senderId: string }) => [r.body, r.senderId])).toEqual([['an answer in the thread', person.id]]);
    // A reply from elsewhere arrives live in the thread and in the count.
    await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'the bot answers back', replyTo: root.id }, { jwt: bot.jwt });
    await thread.getByText('the bot answers back').waitFor();
    await rootItem.getByText('2 replies', { exact: true }).waitFor();

    // Edit and delete one's own message.
    await page.getByLabel('Message', { exact: true }).fill('a typo heer');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const mine = log.getByRole('listitem').filter({ hasText: 'a typo heer' });
    await mine.getByRole('button', { name: 'Edit' }).click();
    // While edited, the text is in the box (the item no longer shows it as text).
    await log.getByLabel('Edit message').fill('a typo here');
    await log.getByRole('button', { name: 'Save' }).click();
    const fixed = log.getByRole('listitem').filter({ hasText: 'a typo here' });
    await fixed.getByText('edited').waitFor();
    await fixed.getByRole('button', { name: 'Delete' }).click();
    await log.getByRole('listitem').filter({ hasText: 'deleted' }).last().waitFor();
    expect(await log.getByText('a typo here').count()).toBe(0);
    // The bot's edit and deletion reach the page live.
    const later = await sendMessage(t.api, bot, room.id, 'bot says something');
    await log.getByText('bot says something').waitFor();
    await t.api.request('PATCH', `/api/v1/rooms/${room.id}/messages/${later.id}`, { body: { body: 'bot says something else' }, jwt: bot.jwt });
    await log.getByText('bot says something else').waitFor();
    await t.api.request('DELETE', `/api/v1/rooms/${room.id}/messages/${later.id}`, { jwt: bot.jwt });
    await expect.poll(() => log.getByText('bot says something else').count()).toBe(0);
    // The page's own requests that failed are listed by the response listener (a browser's favicon request is not the page's).
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('on a phone, Reply and a reply\'s "reply to" link open the thread in view with focus in its box; its address opens it too', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    const root = await sendMessage(t.api, bot, room.id, 'the root of the thread');
    for (let i = 1; i <= 12; i++) await sendMessage(t.api, bot, room.id, `filler message ${i} long enough to take a line or two on a phone`);
    await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'an answer in the thread', replyTo: root.id }, { jwt: bot.jwt });
    const { page, errors } = await open(person, room.id, PHONE);
    const log = page.getByRole('log');
    const thread = page.getByRole('region', { name: 'Thread' });
    const box = thread.getByRole('textbox', { name: 'Reply to thread' });

    // The reply in the timeline says what it answers, as a link to its thread.
    const answer = log.getByRole('listitem').filter({ hasText: 'an answer in the thread' });
    const mark = answer.getByRole('link', { name: `reply to Test ${bot.name}: “the root of the thread”`, exact: true });
    expect(await mark.getAttribute('href')).toBe(`#/rooms/${room.id}/thread/${root.id}`);
    // A message that is not a reply has no such mark.
    expect(await log.getByRole('listitem').filter({ hasText: 'filler message 12' }).getByRole('link', { name: /^reply to / }).count()).toBe(0);
    await mark.click();
    await thread.getByText('an answer in the thread').waitFor();
    await expect.poll(() => isFocused(box)).toBe(true);
    expect(await inViewport(box)).toBe(true);
    expect(await inViewport(thread.getByRole('heading', { name: 'Thread' }))).toBe(true);
    // Closing it gives focus back to where the person was.
    await thread.getByRole('button', { name: 'Close thread' }).click();
    await expect.poll(() => isFocused(mark)).toBe(true);

    // Reply on a message far above the thread's place (one column: the thread is below the conversation).
    // (The first: a reply to it, below, quotes its text.)
    const filler = log.getByRole('listitem').filter({ hasText: 'filler message 3 ' }).first();
    await filler.getByRole('button', { name: 'Reply' }).click();
    await thread.getByText('filler message 3 ').waitFor();
    await expect.poll(() => isFocused(box)).toBe(true);
    expect(await inViewport(box)).toBe(true);
    expect(await inViewport(thread.getByRole('heading', { name: 'Thread' }))).toBe(true);
    await box.fill('typed where the focus went');
    await box.press('Enter');
    await waitUntil('the reply stored', async () => {
      const page2 = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bot.jwt });
      return (page2.body.messages as { body: string }[]).some((m) => m.body === 'typed where the focus went');
    });
    // The page scrolled to the thread: Reply again on the same thread brings it back into view.
    await scrollPage(page, 'top');
    expect(await inViewport(box)).toBe(false);
    await filler.getByRole('button', { name: 'Reply' }).click();
    await expect.poll(() => inViewport(box)).toBe(true);
    await expect.poll(() => isFocused(box)).toBe(true);

    // The link's address opens the thread on a fresh page.
    const fresh = await open(person, room.id, PHONE);
    await fresh.page.goto(`${t.server.url}/console/#/rooms/${room.id}/thread/${root.id}`);
    await fresh.page.getByRole('region', { name: 'Thread' }).getByText('an answer in the thread').waitFor();
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });
});
