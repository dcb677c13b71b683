// The dashboard's Terminal view in Debian's Chromium (playwright-core), every request outside the
// machine blocked: xterm.js served by Keel on a real terminal of a `minimal` workspace. A command
// typed shows its output; after a reload the page reattaches and shows what was written before.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import type { Page } from 'playwright-core';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, createRunning } from '../helpers/workspaces';
import { launchBrowser, screenshot, type TestBrowser } from './browser';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let b: TestBrowser;
let page: Page;
let outside: string[];

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24350-24399' } });
  b = await launchBrowser();
  ({ page, outside } = await b.page());
  await page.goto(p.url('workspaces') + '/ui');
  await page.getByLabel('Token', { exact: true }).fill(p.token('alice'));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
}, 60_000);

afterAll(async () => {
  await b?.close();
  await closeAndClean(p);
});

test('the Terminal view runs a typed command, and after a reload reattaches showing the earlier output', async () => {
  await createRunning(p, 'term-box', { timeoutMs: 60_000 });
  await page.goto(p.url('workspaces') + '/ui#/');
  await page.getByRole('link', { name: 'term-box', exact: true }).click();
  await page.getByRole('heading', { name: 'term-box', exact: true }).waitFor();
  const view = page.getByRole('region', { name: 'Terminal' });
  await view.getByRole('button', { name: 'Open terminal', exact: true }).click();
  const screenText = view.locator('.xterm-rows');
  await screenText.waitFor();
  await page.waitForTimeout(500);
  await view.locator('.xterm').click();
  // The shell computes the product: the typed line's echo alone cannot show it.
  await page.keyboard.type('echo typed-$((6*7))\n');
  await screenText.getByText(/typed-42/).first().waitFor({ timeout: 20_000 });
  await screenshot(page, 'terminal', { fullPage: true });

  // The terminal fills its pane and follows it: a narrower window is fewer columns, and the shell
  // (the server's terminal) is told so.
  const size = async (marker: string) => {
    await page.keyboard.type(`echo ${marker} $(stty size)\n`);
    const line = await screenText.getByText(new RegExp(`^${marker} \\d+ \\d+`)).last().textContent({ timeout: 20_000 });
    const [, rows, cols] = /(\d+) (\d+)/.exec(line!)!.map(Number);
    return { rows: rows!, cols: cols! };
  };
  const wide = await size('wide');
  expect(wide.cols).toBeGreaterThan(100);
  await page.setViewportSize({ width: 700, height: 800 });
  await page.waitForTimeout(500);
  await view.locator('.xterm').click();
  const narrow = await size('narrow');
  expect(narrow.cols).toBeLessThan(wide.cols);
  expect(narrow.cols).toBeGreaterThan(40);
  expect(narrow.rows).toBe(wide.rows);
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.reload();
  const again = page.getByRole('region', { name: 'Terminal' }).locator('.xterm-rows');
  // xterm.js paints only while on screen, as a user scrolling to it sees it.
  await again.scrollIntoViewIfNeeded();
  await again.getByText(/typed-42/).first().waitFor({ timeout: 20_000 });
  expect(outside).toEqual([]);
}, 120_000);
