// The dashboard's Webhooks and Usage pages in Debian's Chromium (playwright-core), every request
// outside the machine blocked: a webhook registered in the page receives a Ping, its delivery shows
// in the log with status, attempts and response code, and Redeliver sends it again; an agent turn's
// tokens and a command's seconds show on the Usage page's charts and table.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import type { Page } from 'playwright-core';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, createRunning } from '../helpers/workspaces';
import { waitFor } from '../helpers/wait';
import { launchBrowser, screenshot, type TestBrowser } from './browser';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let fake: FakeOpenAI;
let b: TestBrowser;
let page: Page;
let outside: string[];
let messages: string[];
const received: { id: string | null; event: string }[] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as { event?: string; type?: string };
    received.push({ id: req.headers.get('webhook-id'), event: body.event ?? body.type ?? '' });
    return new Response('ok');
  },
});

beforeAll(async () => {
  fake = startFakeOpenAI({ slowMs: 10 });
  p = await startTestPlatform({
    services: ['workspaces'],
    env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0', APP_WORKSPACE_PORT_RANGE: '27850-27899' },
  });
  b = await launchBrowser();
  ({ page, outside, console: messages } = await b.page());
  await page.goto(p.url('workspaces') + '/ui');
  await page.getByLabel('Token', { exact: true }).fill(p.token('alice'));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
}, 120_000);

afterAll(async () => {
  await b?.close();
  await closeAndClean(p);
  fake?.close();
  receiver.stop(true);
}, 60_000);

test('Webhooks: register, Ping, the delivery in the log with its status and code, Redeliver, Disable', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
  const hook = `http://127.0.0.1:${receiver.port}/hooks/keel`;
  await page.getByLabel('URL', { exact: true }).fill(hook);
  await page.getByLabel('Secret', { exact: true }).fill('a-secret-of-sixteen+');
  await page.getByRole('button', { name: 'Register', exact: true }).click();
  const list = page.getByRole('list', { name: 'Registered webhooks' });
  await list.getByText(hook, { exact: true }).waitFor();

  await list.getByRole('button', { name: `Ping ${hook}`, exact: true }).click();
  const log = page.getByRole('table', { name: `Deliveries to ${hook}, newest first` });
  const ping = log.getByRole('row').filter({ hasText: 'ping' });
  await ping.getByText('delivered', { exact: true }).waitFor({ timeout: 20_000 });
  expect(await ping.getByRole('cell').nth(2).textContent()).toBe('1');
  expect(await ping.getByRole('cell').nth(3).textContent()).toBe('200');
  expect(received.filter((r) => r.event === 'ping')).toHaveLength(1);
  await screenshot(page, 'webhooks');

  await ping.getByRole('button', { name: /^Redeliver ping / }).click();
  await ping.getByRole('cell').nth(2).getByText('2', { exact: true }).waitFor({ timeout: 20_000 });
  const pings = received.filter((r) => r.event === 'ping');
  expect(pings).toHaveLength(2);
  // The same delivery sent again: one id.
  expect(pings[0]!.id).toBe(pings[1]!.id);

  await list.getByRole('button', { name: `Disable ${hook}`, exact: true }).click();
  await list.getByText(/off \(manual\)/).waitFor();
  const { body } = await p.api('workspaces', '/api/webhooks', { as: 'alice' }).then(async (r) => ({ body: (await r.json()) as any }));
  expect(body.webhooks[0].active).toBe(false);
}, 60_000);

test("Usage: an agent turn's tokens and a command's seconds show for today, drawn", async () => {
  const ws = await createRunning(p, 'usage-page', { timeoutMs: 60_000 });
  const session = (await (await p.api('workspaces', '/api/agent/sessions', { method: 'POST', json: { workspaceId: ws.id, model: 'openai/echo' } })).json()) as { id: string };
  const turn = await p.api('workspaces', `/api/agent/sessions/${session.id}/messages`, { method: 'POST', json: { message: 'hello' } });
  expect(turn.status).toBe(200);
  await p.api('workspaces', `/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command: 'sleep 1.2' } });

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage', exact: true }).click();
  await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor();
  for (const chart of ['Tokens per day', 'Exec seconds per day', 'Running minutes per day']) await page.getByRole('img', { name: chart }).waitFor();
  const today = new Date().toISOString().slice(0, 10);
  const row = page.getByRole('table', { name: 'Usage per UTC day' }).getByRole('row').filter({ has: page.getByRole('rowheader', { name: today }) });
  const cells = row.getByRole('cell');
  expect(Number(await cells.nth(0).textContent())).toBeGreaterThan(0);
  expect(Number(await cells.nth(1).textContent())).toBeGreaterThanOrEqual(1.2);
  // The bar of today is drawn, and higher than an empty day's.
  const bars = page.getByRole('img', { name: 'Tokens per day' }).locator('rect');
  expect(await bars.count()).toBe(7);
  expect(Number(await bars.last().getAttribute('height'))).toBeGreaterThan(0);
  await screenshot(page, 'usage');
}, 90_000);

test('Templates: New template from a Dockerfile, its build output live, then ready in the list', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Templates', exact: true }).click();
  await page.getByRole('heading', { name: 'Templates', exact: true }).waitFor();
  const list = page.getByRole('list', { name: 'Templates' });
  await list.getByText('minimal', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'New template', exact: true }).click();
  await page.getByLabel('Name', { exact: true }).fill('from-the-page');
  await page.getByLabel('Dockerfile', { exact: true }).fill('FROM keel/minimal\nUSER root\nRUN mkdir -p /opt && echo made-in-the-page > /opt/mark\n');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  const output = page.getByRole('log', { name: 'Build output' });
  await output.getByText(/Step 3\/\d+ : RUN mkdir/).waitFor({ timeout: 60_000 });
  await output.getByText('from-the-page: ready').waitFor({ timeout: 60_000 });
  await list.getByRole('listitem').filter({ hasText: 'from-the-page' }).getByText('ready · version 1').waitFor();
  await screenshot(page, 'templates');
  const t = ((await (await p.api('workspaces', '/api/templates', { as: 'alice' })).json()) as { templates: { name: string; status?: string }[] }).templates.find((x) => x.name === 'from-the-page');
  expect(t?.status).toBe('ready');
  // The create form suggests it (built), not a template whose build failed.
  const failed = (await (await p.api('workspaces', '/api/templates', { method: 'POST', json: { name: 'never-built', dockerfile: 'FROM keel/minimal\nRUN exit 1\n' }, as: 'alice' })).json()) as { id: string };
  await waitFor('the failed build', async () => ((await (await p.api('workspaces', `/api/templates/${failed.id}`, { as: 'alice' })).json()) as { status: string }).status === 'failed', 60_000);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workspaces', exact: true }).click();
  await page.getByRole('button', { name: 'New workspace', exact: true }).click();
  const suggested = page.locator(`datalist#${await page.getByLabel('Template', { exact: true }).getAttribute('list')} option`);
  await suggested.nth(2).waitFor({ state: 'attached' });
  expect(await suggested.evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(['bun-typescript', 'minimal', 'from-the-page']);
}, 120_000);

test('nothing left the machine, and the pages broke no policy', () => {
  expect(outside).toEqual([]);
  expect(messages.filter((m) => /Content Security Policy|Refused to|pageerror/i.test(m))).toEqual([]);
});
