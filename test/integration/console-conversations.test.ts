import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage, uniqueName, type TestAgent } from '../helpers/api.js';
import { launchBrowser, openConsole } from '../helpers/browser.js';
import { ensureConsoleBuilt } from '../helpers/build.js';
import { servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, waitFor, type ClientSocket } from '../helpers/ws.js';

// The console's conversations (docs/console.md) in headless Chromium, by the accessible names of the
// contract: Message in the directory and direct rooms named by the other agent, @ suggestions in a
// listbox that fill `mentions`, "mentions you", "is typing" / "is working: <text>", attention counts,
// Attach file and attachments (links, raster images inline).
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

const displayName = (agent: TestAgent): string => `Test ${agent.name}`;
/** A 1x1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

describe.skipIf(!hasChromium)('console: direct rooms, mentions, activity and attention', () => {
  const t = useTestServer();
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const sockets: ClientSocket[] = [];
  let admin: TestAgent;
  let person: TestAgent;
  let bot: TestAgent;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    admin = await newAdmin(t.api);
    [person, bot] = await Promise.all([newAgent(t.api, { name: uniqueName('pat') }), newAgent(t.api, { name: uniqueName('bob') })]);
  }, 180_000);
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Signs `agent` in; `hash` then opens a view (`#/rooms/<id>`, `#/directory`). */
  async function open(agent: TestAgent, hash = ''): Promise<{ page: Page; errors: string[] }> {
    const { context, page, errors } = await openConsole(browser, t.server.url, agent.apiToken, hash);
    contexts.push(context);
    return { page, errors };
  }

  /** A room's entry in the Rooms list: its link reads "<title> <unread>", its attention count beside it. */
  const roomEntry = (page: Page, title: string) =>
    page.getByRole('region', { name: 'Rooms' }).getByRole('listitem').filter({ has: page.getByRole('link', { name: new RegExp(`^${title} \\d+$`) }) });

  it('opens the direct room from the directory, names it by the other agent, and lists one opened by the other side live', { timeout: 60_000 }, async () => {
    const { page, errors } = await open(person);
    await page.getByRole('link', { name: 'Directory', exact: true }).click();
    const row = (agent: TestAgent) => page.getByRole('row').filter({ hasText: agent.name });
    // No Message button for the signed-in agent itself.
    await row(person).waitFor();
    expect(await row(person).getByRole('button', { name: 'Message' }).count()).toBe(0);
    await row(bot).getByRole('button', { name: 'Message', exact: true }).click();

    await page.getByRole('heading', { name: displayName(bot), exact: true }).waitFor();
    await page.getByRole('link', { name: `${displayName(bot)} 0`, exact: true }).waitFor();
    const rooms = (await t.api.get('/api/v1/rooms', { jwt: bot.jwt })).body.rooms as { id: string; kind: string; name: string }[];
    const direct = rooms.find((r) => r.kind === 'direct' && r.name === [person.name, bot.name].sort().join(', '));
    expect(direct).toBeDefined();
    expect(page.url()).toContain(`#/rooms/${direct!.id}`);
    await page.getByLabel('Message', { exact: true }).fill('hello in private');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.getByRole('log').getByText('hello in private').waitFor();
    const history = await t.api.get(`/api/v1/rooms/${direct!.id}/messages`, { jwt: bot.jwt });
    expect(history.body.messages.map((m: { body: string }) => m.body)).toEqual(['hello in private']);

    // Another agent opens a direct room with the person: it is listed without a reload, and its
    // message counts as unread and for the person's attention.
    const carol = await newAgent(t.api, { name: uniqueName('carol') });
    const opened = await t.api.post('/api/v1/direct-rooms', { agentId: person.id }, { jwt: carol.jwt });
    expect(opened.status).toBe(201);
    await page.getByRole('link', { name: `${displayName(carol)} 0`, exact: true }).waitFor();
    await sendMessage(t.api, carol, opened.body.id, 'are you there?');
    await page.getByRole('link', { name: `${displayName(carol)} 1`, exact: true }).waitFor();
    await roomEntry(page, displayName(carol)).getByText('1 for you', { exact: true }).waitFor();
    // Opening it reads it: both counts go.
    await page.getByRole('link', { name: `${displayName(carol)} 1`, exact: true }).click();
    await page.getByRole('log').getByText('are you there?').waitFor();
    await page.getByRole('link', { name: `${displayName(carol)} 0`, exact: true }).waitFor();
    expect(await roomEntry(page, displayName(carol)).getByText(/for you/).count()).toBe(0);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('suggests members after @ in a listbox (keys and mouse), sends their ids in mentions, and marks messages that mention the agent', { timeout: 60_000 }, async () => {
    const dan = await newAgent(t.api, { name: uniqueName('dan') });
    const room = await newRoom(t.api, admin, [person, bot, dan]);
    const { page, errors } = await open(person, `#/rooms/${room.id}`);
    const box = page.getByLabel('Message', { exact: true });
    const listbox = page.getByRole('listbox');
    await page.getByRole('heading', { name: room.name }).waitFor();

    // "@bo" offers bob only; arrows and Enter choose it.
    await box.pressSequentially('hi @bo');
    await listbox.waitFor();
    expect(await listbox.getByRole('option').allTextContents()).toHaveLength(1);
    await listbox.getByRole('option', { name: displayName(bot), exact: true }).waitFor();
    await box.press('ArrowDown');
    await box.press('Enter');
    await listbox.waitFor({ state: 'detached' });
    expect(await box.inputValue()).toBe(`hi @${bot.name} `);

    // Escape closes the list without choosing; a click on an option chooses it.
    await box.pressSequentially('and @d');
    await listbox.getByRole('option', { name: displayName(dan), exact: true }).waitFor();
    await box.press('Escape');
    await listbox.waitFor({ state: 'detached' });
    expect(await box.inputValue()).toBe(`hi @${bot.name} and @d`);
    await box.press('Backspace');
    await box.pressSequentially('da');
    await listbox.getByRole('option', { name: displayName(dan), exact: true }).click();
    expect(await box.inputValue()).toBe(`hi @${bot.name} and @${dan.name} `);

    // Bob's mention is erased before sending: only Dan is in mentions.
    await box.fill(`hi and @${dan.name}`);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.getByRole('log').getByText(`hi and @${dan.name}`).waitFor();
    const sent = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bot.jwt });
    expect(sent.body.messages[0]).toMatchObject({ body: `hi and @${dan.name}`, mentions: [dan.id] });

    // Enter with the list open chooses, Enter without it sends.
    await box.pressSequentially('@bo');
    await box.press('Enter');
    await box.pressSequentially('ping');
    await box.press('Enter');
    await page.getByRole('log').getByText(`@${bot.name} ping`).waitFor();
    const pinged = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bot.jwt });
    expect(pinged.body.messages[0]).toMatchObject({ body: `@${bot.name} ping`, mentions: [bot.id] });

    // A message mentioning the signed-in agent is marked; one that does not is not.
    await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: `@${person.name} look`, mentions: [person.id] }, { jwt: bot.jwt });
    await sendMessage(t.api, bot, room.id, 'nothing for pat');
    const log = page.getByRole('log');
    await log.getByRole('listitem').filter({ hasText: `@${person.name} look` }).getByText('mentions you').waitFor();
    await log.getByRole('listitem').filter({ hasText: 'nothing for pat' }).waitFor();
    expect(await log.getByRole('listitem').filter({ hasText: 'nothing for pat' }).getByText('mentions you').count()).toBe(0);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('shows "is typing" and "is working: <text>" until idle, a message or expiry, and sets typing (throttled) while the person types', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    const { page, errors } = await open(person, `#/rooms/${room.id}`);
    const status = page.locator('.activity[role="status"]');
    await page.getByRole('heading', { name: room.name }).waitFor();
    const activity = (state: string, text?: string) => t.api.post(`/api/v1/rooms/${room.id}/activity`, { state, ...(text ? { text } : {}) }, { jwt: bot.jwt });

    expect((await activity('typing')).status).toBe(204);
    await page.getByText(`${displayName(bot)} is typing`, { exact: true }).waitFor();
    expect((await activity('working', 'reading the logs')).status).toBe(204);
    await page.getByText(`${displayName(bot)} is working: reading the logs`, { exact: true }).waitFor();
    expect((await activity('idle')).status).toBe(204);
    await page.getByText(`${displayName(bot)} is working`).waitFor({ state: 'detached' });
    // A message from the member ends its activity.
    await activity('typing');
    await page.getByText(`${displayName(bot)} is typing`, { exact: true }).waitFor();
    await sendMessage(t.api, bot, room.id, 'done typing');
    await page.getByText(`${displayName(bot)} is typing`).waitFor({ state: 'detached' });
    // Typing expires after 8 s with nothing sent.
    await activity('typing');
    await page.getByText(`${displayName(bot)} is typing`, { exact: true }).waitFor();
    const shownAt = Date.now();
    await page.getByText(`${displayName(bot)} is typing`).waitFor({ state: 'detached', timeout: 15_000 });
    expect(Date.now() - shownAt).toBeGreaterThan(6_000);
    expect(await status.textContent()).toBe('');

    // The person types: one activity:set typing for several keys within 3 s; clearing the box: idle.
    const frames: string[] = [];
    page.on('websocket', (ws) => ws.on('framesent', (f) => { if (typeof f.payload === 'string' && f.payload.includes('activity:set')) frames.push(f.payload); }));
    await page.reload();
    await page.getByLabel('API token').fill(person.apiToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: room.name }).waitFor();
    const { socket } = await connectReady(t.server.url, bot.jwt, { tokenIn: 'auth' });
    sockets.push(socket);
    const typing = waitFor<{ agentId: string; state: string }>(socket, 'activity:update', (u) => u.agentId === person.id && u.state === 'typing');
    await page.getByLabel('Message', { exact: true }).pressSequentially('abcdef');
    await typing;
    expect(frames.filter((f) => f.includes('"typing"'))).toHaveLength(1);
    const idle = waitFor<{ agentId: string; state: string }>(socket, 'activity:update', (u) => u.agentId === person.id && u.state === 'idle');
    await page.getByLabel('Message', { exact: true }).fill('');
    await idle;
    expect(frames.filter((f) => f.includes('"idle"'))).toHaveLength(1);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('counts messages for the agent\'s attention beside unread counts, live: mentions and replies to its messages', { timeout: 60_000 }, async () => {
    const [busy, other] = [await newRoom(t.api, admin, [person, bot]), await newRoom(t.api, admin, [person, bot])];
    const mine = await sendMessage(t.api, person, busy.id, 'my question');
    await t.api.post(`/api/v1/rooms/${busy.id}/messages`, { body: 'before sign-in', mentions: [person.id] }, { jwt: bot.jwt });
    const { page, errors } = await open(person, `#/rooms/${other.id}`);
    const entry = roomEntry(page, busy.name);
    // From the service at first: one unread, for the person's attention.
    await page.getByRole('link', { name: `${busy.name} 1`, exact: true }).waitFor();
    await entry.getByText('1 for you', { exact: true }).waitFor();
    // Live: a plain message counts as unread only; a mention and a reply to the person's message count for attention.
    await sendMessage(t.api, bot, busy.id, 'for everyone');
    await page.getByRole('link', { name: `${busy.name} 2`, exact: true }).waitFor();
    expect(await entry.getByText('1 for you', { exact: true }).count()).toBe(1);
    await t.api.post(`/api/v1/rooms/${busy.id}/messages`, { body: 'hey you', mentions: [person.id] }, { jwt: bot.jwt });
    await page.getByRole('link', { name: `${busy.name} 3`, exact: true }).waitFor();
    await entry.getByText('2 for you', { exact: true }).waitFor();
    await t.api.post(`/api/v1/rooms/${busy.id}/messages`, { body: 'an answer', replyTo: mine.id }, { jwt: bot.jwt });
    await page.getByRole('link', { name: `${busy.name} 4`, exact: true }).waitFor();
    await entry.getByText('3 for you', { exact: true }).waitFor();
    // The quiet room has neither.
    await page.getByRole('link', { name: `${other.name} 0`, exact: true }).waitFor();
    expect(await roomEntry(page, other.name).getByText(/for you/).count()).toBe(0);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('attaches a chosen file to the next message; shows attachments as links with their size, raster images inline, never an SVG; downloads the others', { timeout: 60_000 }, async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    const { page, errors } = await open(person, `#/rooms/${room.id}`);
    await page.getByRole('heading', { name: room.name }).waitFor();
    const log = page.getByRole('log');

    // A PNG from the page, with text.
    await page.getByLabel('Attach file', { exact: true }).setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: PNG });
    await page.getByLabel('Message', { exact: true }).fill('a picture');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const picture = log.getByRole('listitem').filter({ hasText: 'a picture' });
    await picture.getByRole('link', { name: 'dot.png', exact: true }).waitFor();
    await picture.getByText(`(${PNG.length} B)`, { exact: true }).waitFor();
    const img = picture.getByRole('img', { name: 'dot.png', exact: true });
    await img.waitFor();
    expect(await img.getAttribute('alt')).toBe('dot.png');
    expect(await img.getAttribute('src')).toMatch(/^blob:/);
    await expect.poll(() => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(1);
    expect(await page.getByLabel('Attach file', { exact: true }).inputValue()).toBe('');
    const stored = (await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bot.jwt })).body.messages[0];
    expect(stored).toMatchObject({ body: 'a picture', attachments: [{ name: 'dot.png', contentType: 'image/png', size: PNG.length }] });

    // A file alone: its name is the text. The next message carries no file.
    await page.getByLabel('Attach file', { exact: true }).setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('some notes\n') });
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    // The message's item (its attachments are items of a list inside it).
    const notes = log.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'notes.txt', exact: true }) }).first();
    await notes.waitFor();
    expect(await notes.getByRole('img').count()).toBe(0);
    await page.getByLabel('Message', { exact: true }).fill('no file here');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await log.getByText('no file here').waitFor();
    const last = (await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: bot.jwt })).body.messages;
    expect(last[1]).toMatchObject({ body: 'notes.txt', attachments: [{ name: 'notes.txt', size: 11 }] });
    expect(last[0]).toMatchObject({ body: 'no file here', attachments: [] });

    // A click downloads it (with the JWT), under its name.
    const [download] = await Promise.all([page.waitForEvent('download'), notes.getByRole('link', { name: 'notes.txt', exact: true }).click()]);
    expect(download.suggestedFilename()).toBe('notes.txt');
    const chunks: Buffer[] = [];
    for await (const chunk of (await download.createReadStream())) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('some notes\n');

    // An SVG from another agent: a link, never an image of this origin.
    const svg = await fetch(`${t.server.url}/api/v1/files?name=drawing.svg`, {
      method: 'POST', headers: { authorization: `Bearer ${bot.jwt}`, 'content-type': 'image/svg+xml' },
      body: '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="1" height="1"/></svg>',
    });
    expect(svg.status).toBe(201);
    await t.api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'a drawing', attachments: [(await svg.json() as { id: string }).id] }, { jwt: bot.jwt });
    const drawing = log.getByRole('listitem').filter({ hasText: 'a drawing' });
    await drawing.getByRole('link', { name: 'drawing.svg', exact: true }).waitFor();
    expect(await drawing.getByRole('img').count()).toBe(0);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });
});
