import { chromium, type Browser, type Page } from 'playwright-core';
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
