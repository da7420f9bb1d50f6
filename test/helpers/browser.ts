import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
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

/** The viewports the console is tested at: a laptop, and a phone (one column below 48 rem). */
export const DESKTOP = { width: 1100, height: 800 };
export const PHONE = { width: 390, height: 844 };

/**
 * A page of its own (no shared storage) signed in to the console at `url` with `apiToken`, then at
 * `hash` (`#/rooms/<id>`) when given, at `viewport`. `errors` also lists every 4xx/5xx response by URL.
 */
export async function openConsole(browser: Browser, url: string, apiToken: string, hash = '', viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport });
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

/**
 * The role, name and description Chromium itself computes for the element `locator` names (not
 * Playwright's own reckoning: CSS such as `display` can change what the browser exposes), read from
 * its accessibility tree over the DevTools protocol.
 */
export async function chromiumAccessibility(locator: Locator): Promise<{ role: string; name: string; description: string }> {
  const page = locator.page();
  const probe = `probe-${Math.random().toString(36).slice(2)}`;
  await locator.evaluate((el, mark) => el.setAttribute('data-ax-probe', mark), probe);
  const cdp = await page.context().newCDPSession(page);
  try {
    const { root } = await cdp.send('DOM.getDocument', { depth: 0 });
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: `[data-ax-probe="${probe}"]` });
    const { nodes } = await cdp.send('Accessibility.getPartialAXTree', { nodeId, fetchRelatives: false });
    const node = nodes[0];
    return { role: String(node?.role?.value ?? ''), name: String(node?.name?.value ?? ''), description: String(node?.description?.value ?? '') };
  } finally {
    await cdp.detach();
    await locator.evaluate((el) => el.removeAttribute('data-ax-probe'));
  }
}

/** The accessible description Chromium computes for the element (from `title`, `aria-describedby`, ...). */
export const accessibleDescription = async (locator: Locator): Promise<string> => (await chromiumAccessibility(locator)).description;

/** Whether the element is wholly inside the page's viewport (on screen, not scrolled away). */
export async function inViewport(locator: Locator): Promise<boolean> {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const view = el.ownerDocument.defaultView!;
    return r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= view.innerHeight && r.right <= view.innerWidth;
  });
}

/** Whether the element has the page's focus. */
export const isFocused = (locator: Locator): Promise<boolean> => locator.evaluate((el) => el === el.ownerDocument.activeElement);

/** How far the page overflows its viewport sideways (0 or less: it does not). */
export const sidewaysOverflow = (page: Page): Promise<number> => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');

/** Scrolls the page to its end, or its top; resolves to how far down it is then. */
export const scrollPage = (page: Page, to: 'end' | 'top'): Promise<number> =>
  page.evaluate<number>(`window.scrollTo(0, ${to === 'end' ? 'document.documentElement.scrollHeight' : '0'}), window.scrollY`);
