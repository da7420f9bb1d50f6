import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM_PATH } from './services.js';

/**
 * Headless Chromium for the console's end-to-end tests: Debian's `chromium` driven by
 * playwright-core (no browser download). Files that use it check `servicesAvailable(..., ['chromium'])`
 * first, which skips visibly without it, or fails under AMS_REQUIRE_SERVICES=1 (CI).
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** What the page logged as errors and what the browser refused (CSP reports come as console errors). */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return errors;
}

/**
 * A page of its own (no shared storage) signed in to the console at `url` with `apiToken`, then at
 * `hash` (`#/rooms/<id>`) when given. `errors` also lists every 4xx/5xx response by URL.
 */
export async function openConsole(browser: Browser, url: string, apiToken: string, hash = ''): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors = collectPageErrors(page);
  page.on('response', (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
  await page.goto(`${url}/console/`);
  await page.getByLabel('API token').fill(apiToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Rooms', exact: true }).waitFor();
  if (hash !== '') await page.goto(`${url}/console/${hash}`);
  return { context, page, errors };
}
