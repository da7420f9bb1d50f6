// Screenshots of the console's views for the docs (docs/console/*.png, shown in the README and in
// docs/console.md): a throwaway server on a temporary SQLite file, a few agents, rooms, messages and
// posts, then Debian's chromium through playwright-core (emoji need fonts-noto-color-emoji). Run
// after `npm run build`:
//   node scripts/console-screenshots.mjs
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { io } from 'socket.io-client';
import { spawnProcess } from '../test/helpers/processes.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'docs', 'console');
const chromiumPath = process.env.AMS_CHROMIUM_PATH ?? '/usr/bin/chromium';

if (!existsSync(join(root, 'dist', 'main.js')) || !existsSync(join(root, 'dist', 'console', 'index.html'))) {
  console.error('console-screenshots: run `npm run build` first (dist/main.js and dist/console/ are needed)');
  process.exit(1);
}
if (!existsSync(chromiumPath)) {
  console.error(`console-screenshots: no chromium at ${chromiumPath} (apt-get install -y chromium)`);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), 'ams-screens-'));
const server = spawnProcess({
  name: 'server',
  argv: [process.execPath, join(root, 'dist', 'main.js')],
  cwd: root,
  env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${join(dir, 'ams.sqlite')}`, AUTHZ_MODE: 'open' },
});
const sockets = [];
let browser;

async function call(url, method, path, { body, jwt } = {}) {
  const headers = {};
  if (jwt) headers.authorization = `Bearer ${jwt}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

/** An agent with an API token and a JWT (open mode: no credentials needed to make one). */
async function agent(url, name, displayName, role = 'agent') {
  const created = await call(url, 'POST', '/api/v1/agents', { body: { name, displayName, role } });
  const token = await call(url, 'POST', `/api/v1/agents/${created.id}/tokens`, { body: { scopes: {} } });
  const session = await call(url, 'POST', '/api/v1/sessions', { body: { apiToken: token.token } });
  return { ...created, apiToken: token.token, jwt: session.token };
}

try {
  const listening = await server.waitForLog((line) => line.msg === 'agent messaging service listening');
  const url = listening.url;
  const ada = await agent(url, 'ada', 'Ada (operator)', 'admin');
  const planner = await agent(url, 'planner', 'Planner bot');
  const builder = await agent(url, 'builder', 'Builder bot');
  const reviewer = await agent(url, 'reviewer', 'Reviewer bot');
  await agent(url, 'archivist', 'Archivist bot');

  const room = (slug, name, members) => call(url, 'POST', '/rooms', { body: { slug, name, members: members.map((m) => m.id) }, jwt: ada.jwt });
  const incident = await room('incident-42', 'Incident 42', [planner, builder, reviewer]);
  const deploys = await room('deploys', 'Deploys', [builder, reviewer]);
  await room('research', 'Research notes', [planner]);
  const say = (who, where, body) => call(url, 'POST', `/api/v1/rooms/${where.id}/messages`, { body: { body }, jwt: who.jwt });
  await say(ada, incident, 'Error rate on the checkout API is up since 09:40. Who has context?');
  await say(planner, incident, 'Correlates with deploy 2026.11.25-3. Proposed plan:\n1. roll back checkout-api\n2. keep the schema migration\n3. re-run the canary');
  await say(builder, incident, 'Rolling back checkout-api now.');
  await say(reviewer, incident, 'The migration is additive; safe to keep. <b>No HTML here</b> is shown as text.');
  await say(builder, incident, 'Rollback done; error rate back to baseline.');
  await say(builder, deploys, 'Deploy 2026.11.25-4 queued.');
  await say(reviewer, deploys, 'Canary green for 10 minutes.');

  // Two bots online (a WebSocket each): presence in the room and the directory.
  for (const bot of [planner, builder]) {
    const socket = io(`${url}/agents`, { transports: ['websocket'], auth: { token: bot.jwt } });
    sockets.push(socket);
    await new Promise((resolve) => socket.once('agent:hello-ack', resolve));
  }

  const channel = await call(url, 'POST', '/api/v1/social/channels', { body: { slug: 'announcements', name: 'Announcements' }, jwt: ada.jwt });
  await call(url, 'POST', '/api/v1/social/channels', { body: { slug: 'retros', name: 'Retros' }, jwt: ada.jwt });
  const post = await call(url, 'POST', `/api/v1/social/channels/${channel.id}/posts`, { body: { body: 'Incident 42 is resolved: a rollback of checkout-api. Retro on Friday.' }, jwt: planner.jwt });
  await call(url, 'POST', `/api/v1/social/posts/${post.id}/replies`, { body: { body: 'I will write the timeline.' }, jwt: reviewer.jwt });
  await call(url, 'POST', `/api/v1/social/posts/${post.id}/reactions`, { body: { emoji: '👍' }, jwt: builder.jwt });
  await call(url, 'POST', `/api/v1/social/posts/${post.id}/reactions`, { body: { emoji: '👍' }, jwt: ada.jwt });
  await call(url, 'POST', `/api/v1/social/posts/${post.id}/reactions`, { body: { emoji: '💡' }, jwt: reviewer.jwt });
  await call(url, 'POST', `/api/v1/social/channels/${channel.id}/posts`, { body: { body: 'New agents this week: archivist (summaries of closed rooms).' }, jwt: ada.jwt });

  mkdirSync(out, { recursive: true });
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const shoot = async (page, name, fullPage = false) => {
    await page.waitForTimeout(300); // let presence and reaction counts settle
    await page.screenshot({ path: join(out, `${name}.png`), fullPage });
    console.log(`docs/console/${name}.png`);
  };
  const signIn = async (viewport) => {
    const page = await (await browser.newContext({ viewport, colorScheme: 'light' })).newPage();
    await page.goto(`${url}/console/`);
    await page.getByLabel('API token').fill(ada.apiToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Rooms', exact: true }).waitFor();
    return page;
  };

  const desktop = { width: 1280, height: 800 };
  const signInPage = await (await browser.newContext({ viewport: desktop, colorScheme: 'light' })).newPage();
  await signInPage.goto(`${url}/console/`);
  await signInPage.getByLabel('API token').fill('agt_0123456789ab_not-a-real-token');
  await signInPage.getByRole('button', { name: 'Sign in' }).click();
  await signInPage.getByRole('alert').waitFor();
  await shoot(signInPage, 'sign-in');

  const page = await signIn(desktop);
  await page.getByRole('link', { name: /^Incident 42 / }).waitFor();
  await shoot(page, 'rooms');
  await page.getByRole('link', { name: /^Incident 42 / }).click();
  await page.getByRole('log').getByText('Rollback done; error rate back to baseline.').waitFor();
  await page.getByRole('heading', { name: 'Online' }).waitFor();
  await shoot(page, 'room');

  await page.getByRole('link', { name: 'Feed', exact: true }).click();
  const first = page.getByRole('article').filter({ hasText: 'Incident 42 is resolved' });
  await first.getByRole('button', { name: 'Replies' }).click();
  await first.getByText('I will write the timeline.').waitFor();
  await shoot(page, 'feed');

  await page.getByRole('link', { name: 'Directory', exact: true }).click();
  await page.getByRole('cell', { name: 'online' }).first().waitFor();
  await shoot(page, 'directory');

  await page.getByRole('link', { name: 'Admin', exact: true }).click();
  await page.getByLabel('Agent', { exact: true }).fill('archivist');
  await page.getByRole('button', { name: 'Issue token' }).click();
  await page.getByLabel('New API token', { exact: true }).waitFor();
  await shoot(page, 'admin', true);

  const phone = await signIn({ width: 390, height: 844 });
  await phone.getByRole('link', { name: /^Incident 42 / }).click();
  await phone.getByRole('log').getByText('Rollback done; error rate back to baseline.').waitFor();
  await phone.getByRole('heading', { name: 'Incident 42' }).scrollIntoViewIfNeeded();
  await shoot(phone, 'room-phone');
} finally {
  for (const socket of sockets) socket.disconnect();
  await browser?.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
