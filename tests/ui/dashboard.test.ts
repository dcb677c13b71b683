// The dashboard in Debian's Chromium (playwright-core), every request outside the machine blocked,
// against a real engine with the `minimal` template. Found by the accessible names of CONTRACT.md
// ("Pages for people"), as a screen reader would: sign-in, the live list, each action, the
// workspace page (stats, logs, command), and ownership. Screenshots go to docs/screenshots/.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Locator, Page } from 'playwright-core';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, waitStatus } from '../helpers/workspaces';
import { launchBrowser, screenshot, type TestBrowser } from './browser';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let b: TestBrowser;
let page: Page;
let outside: string[];
let messages: string[];
let bobsId = '';

/** Long enough for an engine on a loaded 2-core machine; a UI wait that never ends fails here. */
const ENGINE_MS = 60_000;

const row = (name: string): Locator => page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
const button = (scope: Locator | Page, name: string) => scope.getByRole('button', { name, exact: true });
const statusOf = (name: string, status: string) => row(name).getByText(status, { exact: true }).waitFor({ timeout: ENGINE_MS });

async function createByApi(name: string, as: string): Promise<string> {
  const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', as, json: { name, template: 'minimal' } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

beforeAll(async () => {
  // Host ports of its own: other test runs share this engine.
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24250-24299' } });
  b = await launchBrowser();
  ({ page, outside, console: messages } = await b.page());
  // Bob's workspace exists before Alice signs in: it must never reach her list.
  bobsId = await createByApi('bobs-box', 'bob');
});

afterAll(async () => {
  await b?.close();
  await closeAndClean(p);
});

describe('dashboard', () => {
  test('sign-in: a refused token says so; the token is kept in this tab only', async () => {
    await page.goto(p.url('workspaces') + '/ui');
    await page.getByLabel('Token', { exact: true }).fill('not-a-token');
    await button(page, 'Sign in').click();
    await page.getByRole('alert').getByText(/refused/).waitFor();
    await screenshot(page, 'sign-in');

    const token = p.token('alice');
    await page.getByLabel('Token', { exact: true }).fill(token);
    await button(page, 'Sign in').click();
    await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('keel.token'))).toBe(token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(page.url()).not.toContain(token);
    // A reload of the same tab stays signed in.
    await page.reload();
    await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
    await page.getByText('Live', { exact: true }).waitFor();
    // The API reference opens in a tab of its own that does not inherit the token.
    const [reference] = await Promise.all([page.context().waitForEvent('page'), page.getByRole('link', { name: 'API reference', exact: true }).click()]);
    await reference.waitForLoadState('domcontentloaded');
    expect(new URL(reference.url()).pathname).toBe('/openapi');
    expect(await reference.evaluate(() => sessionStorage.getItem('keel.token'))).toBeNull();
    await reference.close();
  });

  test('the list follows a workspace created through the API without a reload; no one else\'s workspace shows', async () => {
    await page.evaluate(() => ((window as unknown as { keelTestMarker: number }).keelTestMarker = 42));
    const requests: string[] = [];
    const count = (r: { url(): string }) => requests.push(new URL(r.url()).pathname);
    page.on('request', count);
    const id = await createByApi('from-api', 'alice');
    await row('from-api').waitFor({ timeout: ENGINE_MS });
    await statusOf('from-api', 'running');
    page.off('request', count);
    expect(await page.evaluate(() => (window as unknown as { keelTestMarker?: number }).keelTestMarker)).toBe(42);
    // Followed through the one open stream: no new stream, no list poll, one read of what `created` lacks.
    expect(requests.filter((r) => r === '/api/events' || r === '/api/workspaces')).toEqual([]);
    expect(requests.filter((r) => r === `/api/workspaces/${id}`).length).toBeLessThanOrEqual(1);
    // Bob's events (his workspace starting meanwhile, and a new one) pass Alice by.
    await waitStatus(p, bobsId, 'running', { as: 'bob', timeoutMs: ENGINE_MS });
    await createByApi('bobs-second', 'bob');
    await p.api('workspaces', `/api/workspaces/${id}/restart`, { method: 'POST', as: 'alice' });
    await waitStatus(p, id, 'running', { timeoutMs: ENGINE_MS });
    expect(await page.getByText(/bobs-/).count()).toBe(0);
    // Bob's workspace by its address: not there for Alice, back to her list.
    await page.goto(p.url('workspaces') + `/ui#/w/${bobsId}`);
    await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
    expect(await page.getByText(/bobs-/).count()).toBe(0);
  }, 120_000);

  test('create, stop, start, restart and delete (with its dialog) from the list', async () => {
    await button(page, 'New workspace').click();
    // The template field suggests what GET /api/templates lists, not a list of the page's own.
    const suggested = page.locator(`datalist#${await page.getByLabel('Template', { exact: true }).getAttribute('list')} option`);
    await suggested.nth(1).waitFor({ state: 'attached' });
    const options = await suggested.evaluateAll((os) => os.map((o) => ({ value: (o as HTMLOptionElement).value, label: (o as HTMLOptionElement).label })));
    expect(options.map((o) => o.value)).toEqual(['bun-typescript', 'minimal']);
    // Each carries the description the registry gives it.
    for (const o of options) expect(o.label).toMatch(new RegExp(`^${o.value}: \\S`));
    // A refusal of the API is said in the page, in its words.
    await page.getByLabel('Name', { exact: true }).fill('from-api');
    await page.getByLabel('Template', { exact: true }).fill('minimal');
    await button(page, 'Create').click();
    await page.getByRole('alert').getByText(/^Create: .*exists/).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('from-ui');
    await page.getByLabel('Template', { exact: true }).fill('minimal');
    await screenshot(page, 'new-workspace');
    await button(page, 'Create').click();
    await row('from-ui').waitFor();
    await statusOf('from-ui', 'running');
    await screenshot(page, 'list');

    await button(row('from-ui'), 'Stop').click();
    await statusOf('from-ui', 'stopped');
    await button(row('from-ui'), 'Start').click();
    await statusOf('from-ui', 'running');
    await button(row('from-ui'), 'Restart').click();
    await statusOf('from-ui', 'restarting').catch(() => undefined); // may pass too fast to see
    await statusOf('from-ui', 'running');
    expect(await button(row('from-ui'), 'Start').isDisabled()).toBe(true);

    // Delete asks; Cancel keeps the workspace, the dialog's Delete removes it.
    await button(row('from-ui'), 'Delete').click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await screenshot(page, 'delete-dialog');
    await button(dialog, 'Cancel').click();
    await dialog.waitFor({ state: 'detached' });
    expect(await row('from-ui').count()).toBe(1);
    await button(row('from-ui'), 'Delete').click();
    await button(page.getByRole('dialog'), 'Delete').click();
    await row('from-ui').waitFor({ state: 'detached', timeout: ENGINE_MS });
    const list = await (await p.api('workspaces', '/api/workspaces')).json();
    expect((list as { workspaces: { name: string }[] }).workspaces.map((w) => w.name)).not.toContain('from-ui');
  }, 180_000);

  test('a workspace page: stats, URLs, logs that follow, and a command with exit code, stdout and stderr', async () => {
    await page.getByRole('link', { name: 'from-api', exact: true }).click();
    await page.getByRole('heading', { name: 'from-api', exact: true }).waitFor();
    const stats = page.getByRole('region', { name: 'Stats' });
    await stats.getByText('CPU', { exact: true }).waitFor();
    await stats.getByText('Memory', { exact: true }).waitFor();
    const urls = page.getByRole('region', { name: 'URLs' });
    await urls.getByText('Code server:').waitFor();
    // The code server's secret is in the link, not on the screen.
    const secret = new URL((await urls.getByRole('link').getAttribute('href'))!).password;
    expect(secret.length).toBeGreaterThan(0);
    expect(await urls.textContent()).not.toContain(secret);
    expect(await urls.textContent()).toContain(':•••@');

    const logs = page.getByRole('log', { name: 'Logs' });
    await logs.getByText('keel: workspace ready').first().waitFor({ timeout: ENGINE_MS });

    const command = page.getByLabel('Command', { exact: true });
    await command.fill('echo hello-out; echo hello-err >&2; echo followed-line > /proc/1/fd/1; exit 3');
    await button(page, 'Run').click();
    await page.getByRole('region', { name: 'Run a command' }).getByText(/^Exit code 3\b/).waitFor({ timeout: ENGINE_MS });
    expect(await page.getByLabel('stdout', { exact: true }).textContent()).toBe('hello-out\n');
    expect(await page.getByLabel('stderr', { exact: true }).textContent()).toBe('hello-err\n');
    // What the main process writes reaches the open log view, live.
    await logs.getByText('followed-line').waitFor({ timeout: ENGINE_MS });
    // The service filter: only `main` lines, and the view follows again.
    await page.getByLabel('Service').selectOption('main');
    await logs.getByText('keel: workspace ready').first().waitFor({ timeout: ENGINE_MS });
    await screenshot(page, 'workspace', { fullPage: true });

    // A status change reaches this page too.
    await button(page, 'Stop').click();
    await page.getByRole('article').getByText('stopped', { exact: true }).first().waitFor({ timeout: ENGINE_MS });
  }, 120_000);

  test('with the keyboard alone: sign in, create, and delete through the dialog (Escape cancels, focus returns)', async () => {
    const kb = await b.page();
    const k = kb.page;
    /** Presses Tab until the focused element is what `is` names (at most 40 times). */
    const tabTo = async (what: string, is: (el: Element) => boolean) => {
      for (let i = 0; i < 40; i++) {
        await k.keyboard.press('Tab');
        if (await k.evaluate(`(${is.toString()})(document.activeElement)`)) return;
      }
      throw new Error(`Tab never reached ${what}`);
    };
    await k.goto(p.url('workspaces') + '/ui');
    await k.keyboard.type(p.token('alice')); // the Token field has focus on arrival
    await k.keyboard.press('Enter');
    await k.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
    await tabTo('New workspace', (el) => el.textContent === 'New workspace');
    await k.keyboard.press('Enter');
    await k.keyboard.type('by-keys'); // focus moved to Name
    await k.keyboard.press('Tab');
    await k.keyboard.press('ControlOrMeta+a');
    await k.keyboard.type('minimal');
    await k.keyboard.press('Enter');
    const r = k.getByRole('row').filter({ has: k.getByRole('link', { name: 'by-keys', exact: true }) });
    await r.getByText('running', { exact: true }).waitFor({ timeout: ENGINE_MS });

    const isDelete = (el: Element) => el.textContent === 'Delete' && !!el.closest('tr')?.textContent?.includes('by-keys');
    await tabTo('the row\'s Delete', isDelete);
    await k.keyboard.press('Enter');
    await k.getByRole('dialog').waitFor();
    await k.keyboard.press('Escape');
    await k.getByRole('dialog').waitFor({ state: 'detached' });
    expect(await k.evaluate(`(${isDelete.toString()})(document.activeElement)`)).toBe(true);
    await k.keyboard.press('Enter');
    await k.getByRole('dialog').waitFor();
    await tabTo('the dialog\'s Delete', (el) => el.textContent === 'Delete' && !!el.closest('dialog'));
    await k.keyboard.press('Enter');
    await r.waitFor({ state: 'detached', timeout: ENGINE_MS });
    expect(kb.outside).toEqual([]);
    await kb.context.close();
  }, 120_000);

  test('on a phone: the list is readable and its actions reachable', async () => {
    const phone = await b.page({ viewport: { width: 390, height: 844 } });
    await phone.page.goto(p.url('workspaces') + '/ui');
    await phone.page.getByLabel('Token', { exact: true }).fill(p.token('alice'));
    await phone.page.getByLabel('Token', { exact: true }).press('Enter');
    const r = phone.page.getByRole('row').filter({ has: phone.page.getByRole('link', { name: 'from-api', exact: true }) });
    await r.waitFor();
    await button(r, 'Start').waitFor();
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await screenshot(phone.page, 'phone');
    expect(phone.outside).toEqual([]);
  });

  test('a token the API stops accepting signs the tab out, saying why', async () => {
    await page.goto(p.url('workspaces') + '/ui#/');
    await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
    await page.evaluate((t) => sessionStorage.setItem('keel.token', t), p.token('alice', { ttlSeconds: -120 }));
    await page.getByRole('link', { name: 'from-api', exact: true }).click();
    await page.getByRole('alert').getByText(/^Signed out: /).waitFor();
    await page.getByLabel('Token', { exact: true }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('keel.token'))).toBeNull();
  });

  test('nothing left the machine, and the page broke no policy', () => {
    expect(outside).toEqual([]);
    expect(messages.filter((m) => /Content Security Policy|Refused to|pageerror/i.test(m))).toEqual([]);
  });
});
