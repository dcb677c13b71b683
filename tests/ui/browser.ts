// Debian's Chromium driven by playwright-core (never a downloaded browser), with every request that
// would leave the machine aborted and recorded, so a test can assert that a page needs none.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
/** docs/screenshots/ with KEEL_UPDATE_SCREENSHOTS=1; else a scratch folder, so a test run leaves the tree clean. */
export const SCREENSHOTS = process.env.KEEL_UPDATE_SCREENSHOTS === '1' ? join(import.meta.dir, '..', '..', 'docs', 'screenshots') : join(tmpdir(), 'keel-ui-screenshots');

/** The flags this machine's Chromium needs (docs: /work/.library/env/machines/node.md): no sandbox as
 * root, no GPU, no background connections to Google. playwright gives each launch a fresh profile. */
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]']);

export interface TestBrowser {
  browser: Browser;
  /** A new context and page; `outside` lists every request that tried to leave the machine. */
  page(opts?: { viewport?: { width: number; height: number } }): Promise<{ page: Page; context: BrowserContext; outside: string[]; console: string[]; inFlight: Set<string>; failed: string[] }>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async page(opts = {}) {
      const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 800 }, serviceWorkers: 'block' });
      contexts.push(context);
      const outside: string[] = [];
      const messages: string[] = [];
      await context.route('**/*', (route) => {
        const url = new URL(route.request().url());
        // `*.localhost` is loopback too (previews are `<label>.localhost`): Chromium never asks DNS for it.
        if ((url.protocol === 'http:' || url.protocol === 'https:' || url.protocol === 'ws:' || url.protocol === 'wss:') && !LOCAL.has(url.hostname) && !url.hostname.endsWith('.localhost')) {
          outside.push(url.href);
          return route.abort('blockedbyclient');
        }
        return route.continue();
      });
      const page = await context.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') messages.push(m.text());
      });
      page.on('pageerror', (e) => messages.push(`pageerror: ${e.message}`));
      // What the page waits on now (open streams among them) and the requests that failed, for a test
      // to say why a view never came.
      const inFlight = new Set<string>();
      const failed: string[] = [];
      const named = (r: Request) => `${r.method()} ${r.url()}`;
      page.on('request', (r) => inFlight.add(named(r)));
      page.on('requestfinished', (r) => inFlight.delete(named(r)));
      page.on('requestfailed', (r) => {
        inFlight.delete(named(r));
        failed.push(`${named(r)}: ${r.failure()?.errorText}`);
      });
      return { page, context, outside, console: messages, inFlight, failed };
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close();
    },
  };
}

export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: opts.fullPage ?? false });
}
