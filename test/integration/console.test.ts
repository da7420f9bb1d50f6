import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, uniqueName, type TestAgent } from '../helpers/api.js';
import { accessibleDescription, collectPageErrors, DESKTOP, inViewport, launchBrowser, PHONE, scrollPage, sidewaysOverflow } from '../helpers/browser.js';
import { ensureBuilt, ensureConsoleBuilt } from '../helpers/build.js';
import { createTestDatabase, startServerProcess, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from '../helpers/server.js';
import { freePort, servicesAvailable } from '../helpers/services.js';
import { useTestServer } from '../helpers/suite.js';
import { untilPast, waitUntil } from '../helpers/wait.js';
import { connect, type ClientSocket } from '../helpers/ws.js';

/**
 * The console (docs/console.md) in headless Chromium, driven by the accessible names the
 * contract lists: sign in, rooms and unread counts, live messages both ways, the feed, the admin's
 * token issue, bodies shown as text, and reconnection with catch-up after a server restart.
 */
const hasChromium = await servicesAvailable('console (browser tests)', ['chromium']);

const CSP_VIOLATION = /Content Security Policy|Refused to/i;

/** Opens the console and signs in with an API token (the outcome is for the caller to await). */
async function signIn(page: Page, url: string, apiToken: string): Promise<void> {
  await page.goto(`${url}/console/`);
  await page.getByLabel('API token').fill(apiToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A page of its own (no shared storage), signed in with `agent`'s API token. */
async function signedIn(browser: Browser, url: string, agent: TestAgent, viewport = { width: 1100, height: 800 }): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = collectPageErrors(page);
  await signIn(page, url, agent.apiToken);
  await page.getByRole('link', { name: 'Rooms', exact: true }).waitFor();
  return { context, page, errors };
}

/** The link of a room in the list: its accessible name is the room's name and its unread count. */
const roomLink = (page: Page, name: string, unread: number) => page.getByRole('link', { name: `${name} ${unread}`, exact: true });

describe.skipIf(!hasChromium)('console in headless Chromium', () => {
  const t = useTestServer();
  let browser: Browser;
  let admin: TestAgent;
  let person: TestAgent;
  let bot: TestAgent;
  const sockets: ClientSocket[] = [];
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
    admin = await newAdmin(t.api);
    person = await newAgent(t.api);
    bot = await newAgent(t.api);
  }, 180_000);
  const pageErrors: string[][] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    for (const context of contexts.splice(0)) await context.close();
    // Whatever a test did, the browser refused nothing of the page (CSP reports come as console errors).
    expect(pageErrors.splice(0).flat().filter((e) => CSP_VIOLATION.test(e))).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
  });

  const open = async (agent: TestAgent, viewport?: { width: number; height: number }): Promise<{ page: Page; errors: string[] }> => {
    const { context, page, errors } = await signedIn(browser, t.server.url, agent, viewport);
    contexts.push(context);
    pageErrors.push(errors);
    return { page, errors };
  };

  it('is served by the service under /console/ with a strict CSP, / redirects there, hashed assets are immutable', async () => {
    const root = await fetch(`${t.server.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
    const page = await fetch(`${t.server.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe("default-src 'self'; img-src 'self' blob:");
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    // Nothing inline: every script has a src, no style element or attribute, no other host.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=/);
    expect(html).not.toMatch(/https?:\/\//);
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) {
      const res = await fetch(`${t.server.url}${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('content-security-policy')).toBe("default-src 'self'; img-src 'self' blob:");
    }
    expect((await fetch(`${t.server.url}/console/assets/nothing-here.js`)).status).toBe(404);
    expect((await fetch(`${t.server.url}/console/assets/..%2Fconsole%2Findex.html`)).status).toBe(404);
  });

  it('signs in with an API token (a bad one is "invalid"), shows the display name and the navigation, signs out', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    await page.goto(`${t.server.url}/`);
    expect(page.url()).toBe(`${t.server.url}/console/`);
    await page.getByLabel('API token').fill('agt_nothing_wrongwrongwrongwrongwrongwrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/invalid/);

    await page.getByLabel('API token').fill(person.apiToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    for (const name of ['Rooms', 'Feed', 'Directory']) await page.getByRole('link', { name, exact: true }).waitFor();
    await page.getByText(`Test ${person.name}`, { exact: true }).waitFor();
    expect(await page.getByRole('link', { name: 'Admin', exact: true }).count()).toBe(0);
    // Nothing of the session is kept where another page or a later visit could read it.
    expect(await page.evaluate('[localStorage.length, sessionStorage.length, document.cookie]')).toEqual([0, 0, '']);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor();
    expect(errors.filter((e) => CSP_VIOLATION.test(e))).toEqual([]);
  });

  it('lists rooms with unread counts, shows live messages both ways, marks what is shown read, and renders bodies as text', async () => {
    const quiet = await newRoom(t.api, admin, [person, bot]);
    const busy = await newRoom(t.api, admin, [person, bot]);
    const elsewhere = await newRoom(t.api, admin, [bot]);
    await sendMessage(t.api, bot, quiet.id, 'waiting for you');
    await sendMessage(t.api, bot, quiet.id, 'still waiting');
    const { page } = await open(person);

    await roomLink(page, quiet.name, 2).waitFor();
    await roomLink(page, busy.name, 0).waitFor();
    // Open mode lists every room over REST; the console shows only the person's own, and opening
    // another by its address shows no history and no composer.
    expect(await page.getByRole('link', { name: new RegExp(`^${elsewhere.name} `) }).count()).toBe(0);
    await page.evaluate(`location.hash = '#/rooms/${elsewhere.id}'`);
    await page.getByRole('alert').filter({ hasText: 'not a member' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Message', exact: true }).count()).toBe(0);
    await page.evaluate(`location.hash = '#/rooms'`);
    // A message arriving while the room is closed raises its count live.
    await sendMessage(t.api, bot, busy.id, 'one more');
    await roomLink(page, busy.name, 1).waitFor();

    await roomLink(page, quiet.name, 2).click();
    const log = page.getByRole('log');
    await log.getByText('still waiting').waitFor();
    await roomLink(page, quiet.name, 0).waitFor();
    await waitUntil('the shown messages to be marked read', async () => {
      const rooms = (await t.api.get('/api/v1/rooms', { jwt: person.jwt })).body.rooms as { id: string; unreadCount: number }[];
      return rooms.find((r) => r.id === quiet.id)?.unreadCount === 0;
    });

    // From an agent over the WebSocket to the page, live.
    const socket = connect(t.server.url, bot.jwt, { tokenIn: 'auth' });
    sockets.push(socket);
    const received: { body: string; authorAgentId: string }[] = [];
    socket.on('message:new', (m: { body: string; authorAgentId: string }) => received.push(m));
    await new Promise<void>((resolve) => socket.once('agent:hello-ack', () => resolve()));
    // Online members by display name, kept current by presence updates.
    const online = page.getByRole('complementary').filter({ has: page.getByRole('heading', { name: 'Online', exact: true }) });
    await online.getByText(`Test ${bot.name}`, { exact: true }).waitFor();
    await online.getByText(`Test ${person.name}`, { exact: true }).waitFor();
    expect(await online.getByText(`Test ${admin.name}`, { exact: true }).count()).toBe(0);
    const injection = '<img src=x onerror="window.__pwned=1"><b>bold?</b> & <script>window.__pwned=2</script>';
    await new Promise((resolve) => socket.emit('message:send', { roomId: quiet.id, body: injection }, resolve));
    await log.getByText(injection, { exact: true }).waitFor();
    expect(await log.locator('img, b, script').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();

    // From the page to the agent: Enter sends, Shift+Enter is a new line.
    const box = page.getByRole('textbox', { name: 'Message', exact: true });
    await box.fill('first line');
    await box.press('Shift+Enter');
    await box.pressSequentially('second line');
    await box.press('Enter');
    await waitUntil('the agent to receive the page\'s message', () => received.some((m) => m.body === 'first line\nsecond line' && m.authorAgentId === person.id));
    await expect.poll(() => box.inputValue()).toBe('');
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor();
    socket.disconnect();
    await online.getByText(`Test ${bot.name}`, { exact: true }).waitFor({ state: 'detached' });
  });

  it('keeps a 16,384-character body inside a phone-width screen', async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    await sendMessage(t.api, bot, room.id, 'x'.repeat(16_384));
    await sendMessage(t.api, bot, room.id, 'word '.repeat(3000).trim());
    const { page } = await open(person, { width: 390, height: 844 });
    await page.getByRole('link', { name: new RegExp(`^${room.name} `) }).click();
    await page.getByRole('log').getByText('x'.repeat(100)).waitFor();
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await page.getByRole('textbox', { name: 'Message', exact: true }).waitFor();
  });

  it('loads older pages of the history when scrolled up', async () => {
    const room = await newRoom(t.api, admin, [person, bot]);
    for (let i = 1; i <= 120; i++) await sendMessage(t.api, bot, room.id, `numbered ${i}`);
    const { page } = await open(person);
    await page.getByRole('link', { name: new RegExp(`^${room.name} `) }).click();
    const log = page.getByRole('log');
    await log.getByText('numbered 120', { exact: true }).waitFor();
    expect(await log.getByText('numbered 1', { exact: true }).count()).toBe(0);
    for (const wanted of ['numbered 70', 'numbered 1']) {
      await waitUntil(`${wanted} after scrolling up`, async () => {
        await log.evaluate((el) => el.scrollTo(0, 0));
        return (await log.getByText(wanted, { exact: true }).count()) === 1;
      });
    }
    const shown = await log.locator('.body').allTextContents();
    expect(shown).toEqual(Array.from({ length: 120 }, (_, i) => `numbered ${i + 1}`));
  });

  it('shows the feed: channels, posts with reply counts, a new post, a thread with a reply, reaction toggles', async () => {
    const channel = await t.api.post('/api/v1/social/channels', { slug: uniqueName('chan'), name: `Channel ${uniqueName('c')}` }, { jwt: admin.jwt });
    expect(channel.status).toBe(201);
    const botPost = await t.api.post(`/api/v1/social/channels/${channel.body.id}/posts`, { body: 'a post from the bot' }, { jwt: bot.jwt });
    expect(botPost.status).toBe(201);
    const { page } = await open(person);
    await page.getByRole('link', { name: 'Feed', exact: true }).click();
    await page.getByRole('link', { name: channel.body.name, exact: true }).click();
    const post = page.getByRole('article').filter({ hasText: 'a post from the bot' });
    await post.getByText('0 replies').waitFor();

    await page.getByRole('textbox', { name: 'New post', exact: true }).fill('a post from the console');
    await page.getByRole('button', { name: 'Post', exact: true }).click();
    await page.getByRole('article').filter({ hasText: 'a post from the console' }).waitFor();

    await post.getByRole('button', { name: 'Replies' }).click();
    await post.getByRole('textbox', { name: 'Reply', exact: true }).fill('a reply from the console');
    await post.getByRole('button', { name: 'Send reply' }).click();
    await post.getByText('a reply from the console').waitFor();
    await post.getByText('1 reply', { exact: true }).waitFor();
    const thread = await t.api.get(`/api/v1/social/posts/${botPost.body.id}/thread`, { jwt: bot.jwt });
    expect(thread.body.replies.map((r: { body: string; authorAgentId: string }) => [r.body, r.authorAgentId])).toEqual([['a reply from the console', person.id]]);

    await t.api.post(`/api/v1/social/posts/${botPost.body.id}/reactions`, { emoji: '💡' }, { jwt: bot.jwt });
    // Named by the emoji and its count (the published name); the words, for a screen without an
    // emoji font, are the title and so the accessible description.
    const thumbs = post.getByRole('button', { name: '👍 0', exact: true });
    await expect.poll(() => thumbs.getAttribute('aria-pressed')).toBe('false');
    expect(await thumbs.getAttribute('title')).toBe('React with thumbs up');
    expect(await accessibleDescription(thumbs)).toBe('React with thumbs up');
    await thumbs.click();
    const pressed = post.getByRole('button', { name: '👍 1', exact: true });
    await expect.poll(() => pressed.getAttribute('aria-pressed')).toBe('true');
    // Another agent's reaction counts but is not pressed for this one.
    const bulb = post.getByRole('button', { name: '💡 1', exact: true });
    expect(await bulb.getAttribute('aria-pressed')).toBe('false');
    expect(await accessibleDescription(bulb)).toBe('React with light bulb');
    await post.getByRole('button', { name: '🤔 0', exact: true }).waitFor();
  });

  it('lists every agent in the directory with its role and online state', async () => {
    const socket = connect(t.server.url, bot.jwt, { tokenIn: 'auth' });
    sockets.push(socket);
    await new Promise<void>((resolve) => socket.once('agent:hello-ack', () => resolve()));
    const { page } = await open(person);
    await page.getByRole('link', { name: 'Directory', exact: true }).click();
    const row = (agent: TestAgent) => page.getByRole('row').filter({ hasText: agent.name });
    await row(bot).getByRole('cell', { name: 'online', exact: true }).waitFor();
    await row(admin).getByRole('cell', { name: 'offline', exact: true }).waitFor();
    await row(admin).getByRole('cell', { name: 'admin', exact: true }).waitFor();
    await row(person).getByRole('cell', { name: 'online', exact: true }).waitFor();
  });

  it('lets an admin create an agent, issue it a token shown once, revoke it, and manage rooms and members', async () => {
    const { page } = await open(admin);
    await page.getByRole('link', { name: 'Admin', exact: true }).click();
    const name = uniqueName('made');
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Display name', { exact: true }).fill('Made In Console');
    await page.getByLabel('Role', { exact: true }).selectOption('agent');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('status').filter({ hasText: `Created agent ${name}` }).waitFor();

    await page.getByLabel('Agent', { exact: true }).fill(name);
    await page.getByRole('button', { name: 'Issue token' }).click();
    const tokenField = page.getByLabel('New API token', { exact: true });
    await tokenField.waitFor();
    const token = await tokenField.inputValue();
    expect(token).toMatch(/^agt_[^_]+_.+/);
    await page.getByRole('button', { name: /copy/i }).waitFor();
    expect((await t.api.exchange(token)).status).toBe(201);

    await page.getByLabel('Token prefix', { exact: true }).fill(token.split('_').slice(0, 2).join('_'));
    await page.getByRole('button', { name: 'Revoke', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Revoked' }).waitFor();
    expect((await t.api.exchange(token)).status).toBe(401);
    // Shown once: a fresh visit of the view does not show it again.
    await page.getByRole('link', { name: 'Rooms', exact: true }).click();
    await page.getByRole('link', { name: 'Admin', exact: true }).click();
    expect(await page.getByLabel('New API token', { exact: true }).count()).toBe(0);

    const slug = uniqueName('made-room');
    await page.getByLabel('Slug', { exact: true }).fill(slug);
    await page.getByLabel('Room name', { exact: true }).fill('Made room');
    await page.getByRole('button', { name: 'Create room' }).click();
    await page.getByRole('status').filter({ hasText: `Created room Made room (${slug})` }).waitFor();
    const made = ((await t.api.get('/rooms')).body as { id: string; slug: string }[]).find((r) => r.slug === slug)!;

    await page.getByLabel('Room', { exact: true }).fill(slug);
    await page.getByLabel('Member', { exact: true }).fill(bot.name);
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('status').filter({ hasText: `Added ${bot.name}` }).waitFor();
    expect((await t.api.post(`/api/v1/rooms/${made.id}/messages`, { body: 'in' }, { jwt: bot.jwt })).status).toBe(201);
    await page.getByRole('button', { name: 'Remove member' }).click();
    await page.getByRole('status').filter({ hasText: `Removed ${bot.name}` }).waitFor();
    expect((await t.api.post(`/api/v1/rooms/${made.id}/messages`, { body: 'out' }, { jwt: bot.jwt })).status).toBe(403);
  });

  it('keeps the navigation on screen while the admin forms are used, at phone and desktop width', async () => {
    for (const viewport of [PHONE, DESKTOP]) {
      const { page } = await open(admin, viewport);
      await page.getByRole('link', { name: 'Admin', exact: true }).click();
      // The last form of the page: filling it scrolls the page down to it.
      const slug = uniqueName('nav-room');
      await page.getByLabel('Slug', { exact: true }).fill(slug);
      await page.getByLabel('Room name', { exact: true }).fill('Navigation room');
      await page.getByRole('button', { name: 'Create room' }).click();
      await page.getByRole('status').filter({ hasText: `Created room Navigation room (${slug})` }).waitFor();
      await page.getByLabel('Member', { exact: true }).fill(bot.name);
      await page.getByRole('button', { name: `Tokens of ${bot.name}` }).click();
      await page.getByRole('region', { name: `Tokens of ${bot.name}` }).waitFor();
      expect(await scrollPage(page, 'end')).toBeGreaterThan(0);
      for (const link of ['Rooms', 'Feed', 'Directory', 'Tasks', 'Admin', 'Audit']) {
        expect(await inViewport(page.getByRole('link', { name: link, exact: true })), `${link} at ${viewport.width} px`).toBe(true);
      }
      // Focus moved into a field is not hidden under the navigation.
      await page.getByLabel('Member', { exact: true }).focus();
      expect(await inViewport(page.getByLabel('Member', { exact: true }))).toBe(true);
      const [field, header] = await Promise.all([
        page.getByLabel('Member', { exact: true }).boundingBox(),
        page.getByRole('navigation', { name: 'Main' }).boundingBox(),
      ]);
      expect(field!.y).toBeGreaterThanOrEqual(header!.y + header!.height);
      await page.getByRole('link', { name: 'Rooms', exact: true }).click();
      await page.getByRole('heading', { name: 'Rooms', exact: true }).waitFor();
      expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    }
  });

  it('lists an agent\'s tokens with Revoke, and disables and enables the agent', async () => {
    const subject = await newAgent(t.api);
    const { page } = await open(admin);
    await page.getByRole('link', { name: 'Admin', exact: true }).click();
    await page.getByRole('button', { name: `Tokens of ${subject.name}`, exact: true }).click();
    const tokens = page.getByRole('region', { name: `Tokens of ${subject.name}` });
    const row = tokens.getByRole('row').filter({ hasText: subject.prefix });
    await row.getByRole('cell', { name: 'active', exact: true }).waitFor();
    await row.getByRole('button', { name: `Revoke ${subject.prefix}`, exact: true }).click();
    await row.getByRole('cell', { name: 'revoked', exact: true }).waitFor();
    expect((await t.api.exchange(subject.apiToken)).status).toBe(401);
    expect(await tokens.textContent()).not.toContain(subject.apiToken.split('_')[2]);

    await page.getByRole('button', { name: `Disable ${subject.name}`, exact: true }).click();
    await page.getByRole('status').filter({ hasText: `Disabled ${subject.name}.` }).waitFor();
    const disabledAt = async () => ((await t.api.get('/api/v1/agents', { jwt: admin.jwt })).body as { id: string; disabledAt: string | null }[]).find((a) => a.id === subject.id)!.disabledAt;
    expect(await disabledAt()).not.toBeNull();
    await page.getByRole('button', { name: `Enable ${subject.name}`, exact: true }).click();
    await page.getByRole('status').filter({ hasText: `Enabled ${subject.name}.` }).waitFor();
    expect(await disabledAt()).toBeNull();
  });
});

describe.skipIf(!hasChromium)('console with short-lived JWTs', () => {
  // 4 s sessions: the client renews before `exp` (80 % of a lifetime this short, 60 s ahead of a normal one).
  const t = useTestServer({ config: { jwtTtlSeconds: 4 } });
  let browser: Browser;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('renews the JWT before it expires and keeps working past the first one\'s end', async () => {
    const admin = await newAdmin(t.api);
    const person = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [person]);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      let exchanges = 0;
      let firstExchangeAt = 0;
      page.on('request', (request) => {
        if (request.method() !== 'POST' || !request.url().endsWith('/api/v1/sessions')) return;
        if (exchanges++ === 0) firstExchangeAt = Date.now();
      });
      await signIn(page, t.server.url, person.apiToken);
      await roomLink(page, room.name, 0).click();
      await waitUntil('a second token exchange (the renewal)', () => exchanges >= 2, 10_000);
      // Past the first JWT's `exp` (4 s after its exchange, a second of margin for its `iat` rounding):
      // the page still sends, over REST, with the renewed one.
      await untilPast(firstExchangeAt + 5_000);
      await page.getByRole('textbox', { name: 'Message', exact: true }).fill('after the first JWT ended');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await page.getByRole('log').getByText('after the first JWT ended').waitFor();
      const history = await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: (await t.api.exchange(admin.apiToken)).body.token });
      expect(history.body.messages.map((m: { body: string }) => m.body)).toEqual(['after the first JWT ended']);
      expect(await page.getByRole('alert').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('ends the session when the renewal is refused (the API token was revoked): back to sign-in, "invalid"', async () => {
    const person = await newAgent(t.api);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await signIn(page, t.server.url, person.apiToken);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      expect((await t.api.delete(`/api/v1/tokens/${person.prefix}`)).status).toBe(204);
      await page.getByLabel('API token').waitFor({ timeout: 15_000 });
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/invalid/);
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('console across a server restart', () => {
  let browser: Browser;
  let db: TestDatabase;
  let server: StartedServer | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    await Promise.all([ensureBuilt(), ensureConsoleBuilt()]);
    browser = await launchBrowser();
    db = await createTestDatabase();
    env = {
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_JWT_SECRET,
      PORT: String(await freePort()),
      RATE_LIMIT_ANON_PER_MINUTE: '100000',
      RATE_LIMIT_AGENT_PER_MINUTE: '100000',
    };
    server = await startServerProcess(env, { name: 'console-server' });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.kill();
    await db?.drop();
  });

  it('shows "reconnecting…" while the server is down, then catches up on everything it missed, once', async () => {
    const api = new Api(server!.url);
    const admin = await newAdmin(api);
    const person = await newAgent(api);
    const bot = await newAgent(api);
    const room = await newRoom(api, admin, [person, bot]);
    await sendMessage(api, bot, room.id, 'before the restart');
    const { context, page } = await signedIn(browser, server!.url, person);
    try {
      await roomLink(page, room.name, 1).click();
      const log = page.getByRole('log');
      await log.getByText('before the restart').waitFor();

      await server!.kill('SIGKILL');
      await page.getByText('reconnecting…').waitFor();
      server = await startServerProcess(env, { name: 'console-server' });
      // Sent at once on the fresh server, before the page's next reconnect attempt: only the
      // catch-up (room:sync from the last seq seen) can bring them.
      const missed = ['missed one', 'missed two', 'missed three'];
      for (const body of missed) await sendMessage(api, bot, room.id, body);
      await page.getByText('reconnecting…').waitFor({ state: 'detached', timeout: 30_000 });
      for (const body of missed) await log.getByText(body, { exact: true }).waitFor();
      await sendMessage(api, bot, room.id, 'live again');
      await log.getByText('live again', { exact: true }).waitFor();
      const shown = await log.locator('.body').allTextContents();
      expect(shown).toEqual(['before the restart', ...missed, 'live again']);
    } finally {
      await context.close();
    }
  });
});
