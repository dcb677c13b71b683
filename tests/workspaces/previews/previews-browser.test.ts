// Previews in Debian's Chromium (playwright-core, every request outside the machine blocked), as a
// user meets them: a link made from the dashboard's Previews panel opens a page built with absolute
// asset paths (`/assets/app.js`, as Vite builds it) that runs; two previews are two origins, so what
// one page stores (cookies, localStorage) the other never sees; a revoked link is gone from the panel.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import type { Page } from 'playwright-core';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { closeAndClean, createRunning } from '../../helpers/workspaces';
import { launchBrowser, type TestBrowser } from '../../ui/browser';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let b: TestBrowser;
let page: Page;
let outside: string[];
let ws = '';

const api = (path: string, init: RequestInit & { json?: unknown } = {}) => p.api('workspaces', path, init);

// The app: its script stores the page's own mark and shows what it finds already stored.
const APP_JS = `const seen = { cookie: document.cookie, stored: localStorage.getItem('tenant') };
const mark = new URLSearchParams(location.search).get('mark');
if (mark) { document.cookie = 'tenant=' + mark + '; path=/'; localStorage.setItem('tenant', mark); }
document.getElementById('app').textContent = 'built ' + JSON.stringify(seen);
`;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
  ws = (await createRunning(p, 'previews-browser', { timeoutMs: 90_000 })).id;
  for (const [path, body] of [
    ['site/index.html', '<!doctype html><title>app</title><link rel="stylesheet" href="/assets/app.css"><div id="app">not built</div><script type="module" src="/assets/app.js"></script>\n'],
    ['site/assets/app.js', APP_JS],
    ['site/assets/app.css', '#app { color: rgb(0, 128, 128) }\n'],
  ] as const) {
    expect((await api(`/api/workspaces/${ws}/files?path=${path}`, { method: 'PUT', body })).status).toBe(200);
  }
  expect((await api(`/api/workspaces/${ws}/processes`, { method: 'POST', json: { command: 'exec httpd -f -p 8090 -c /dev/null -h /workspace/site' } })).status).toBe(201);
  b = await launchBrowser();
  ({ page, outside } = await b.page());
  await page.goto(p.url('workspaces') + '/ui');
  await page.getByLabel('Token', { exact: true }).fill(p.token('alice'));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
}, 120_000);

afterAll(async () => {
  await b?.close();
  await closeAndClean(p);
}, 60_000);

test("a preview made in the dashboard opens the workspace's app, its absolute asset paths loaded and run", async () => {
  await page.goto(p.url('workspaces') + `/ui#/w/${ws}`);
  const panel = page.getByRole('region', { name: 'Previews' });
  await panel.getByRole('button', { name: 'New preview', exact: true }).click();
  await panel.getByLabel('Port', { exact: true }).fill('8090');
  await panel.getByRole('button', { name: 'Create', exact: true }).click();
  const link = panel.getByRole('link', { name: 'Open the preview of port 8090' });
  await link.waitFor();
  const url = (await link.getAttribute('href'))!;
  expect(url).toMatch(/^http:\/\/[0-9a-f]{40}\.localhost:\d+\/$/);

  // Open: a tab of its own, with no handle on the dashboard.
  const [app] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  expect(await app.evaluate(() => window.opener)).toBeNull();
  await app.getByText(/^built /).waitFor({ timeout: 20_000 });
  expect(await app.locator('#app').evaluate((el) => getComputedStyle(el).color)).toBe('rgb(0, 128, 128)');
  await app.close();

  await panel.getByRole('button', { name: 'Revoke the preview of port 8090', exact: true }).click();
  await panel.getByText('(revoked)').waitFor();
  expect((await fetch(url)).status).toBe(410);
  expect(outside).toEqual([]);
}, 60_000);

test("two previews are two origins: one page's cookies and localStorage never reach the other", async () => {
  const make = async () => ((await (await api(`/api/workspaces/${ws}/previews`, { method: 'POST', json: { port: 8090 } })).json()) as { url: string }).url;
  const [a, b2] = [await make(), await make()];
  const tab = await page.context().newPage();
  const open = async (url: string) => {
    await tab.goto(url);
    await tab.getByText(/^built /).waitFor({ timeout: 20_000 });
    return tab.locator('#app').textContent();
  };
  await open(`${a}?mark=A`);
  // The same preview again: its own cookie and storage are there.
  expect(await open(a)).toBe('built {"cookie":"tenant=A","stored":"A"}');
  // The other preview, in the same browser: nothing of A's.
  expect(await open(b2)).toBe('built {"cookie":"","stored":null}');
  await tab.close();
  expect(outside).toEqual([]);
}, 60_000);
