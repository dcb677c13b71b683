// The API reference at /openapi renders in Chromium with every request outside the machine
// blocked, on every service that publishes an OpenAPI document: the script is Keel's own (the
// pinned npm package), served under a policy of Keel's origin only.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import type { ServiceName } from '../../src/platform/config';
import { launchBrowser, screenshot, type TestBrowser } from './browser';

let p: TestPlatform;
let b: TestBrowser;
const SERVICES: ServiceName[] = ['workspaces', 'catalog', 'identity', 'sources', 'workers'];

beforeAll(async () => {
  p = await startTestPlatform({ services: SERVICES });
  b = await launchBrowser();
});

afterAll(async () => {
  await b?.close();
  await p?.close();
});

test('every /openapi renders offline: the API title, no request outside, no policy violation', async () => {
  let checked = 0;
  for (const service of SERVICES) {
    const spec = await fetch(p.url(service) + '/openapi.json');
    if (spec.status !== 200) continue; // a service without an OpenAPI document has no reference page
    const doc = (await spec.json()) as { info: { title: string }; tags?: { name: string }[] };
    const title = doc.info.title;
    const tag = doc.tags?.[0]?.name;
    checked++;

    const res = await fetch(p.url(service) + '/openapi');
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/https?:|\*/);
    const html = await res.text();
    expect(html).not.toMatch(/<script[^>]+src="https?:/);
    expect(html).not.toContain('cdn.jsdelivr.net');

    const { page, outside, console: messages } = await b.page();
    await page.goto(p.url(service) + '/openapi');
    await page.getByRole('heading', { name: title, exact: true }).first().waitFor({ state: 'visible', timeout: 30_000 });
    // An operation of the document is listed too: the reference shows the document, not only a title.
    if (tag) await page.getByText(tag, { exact: true }).first().waitFor({ state: 'attached', timeout: 10_000 });
    expect(outside).toEqual([]);
    expect(messages.filter((m) => /Content Security Policy|Refused to/i.test(m))).toEqual([]);
    if (service === 'workspaces') await screenshot(page, 'reference');
    await page.context().close();
  }
  // workspaces, catalog and identity publish a document on any branch of Keel.
  expect(checked).toBeGreaterThanOrEqual(3);
}, 120_000);

test('the bundle is served by Keel, pinned, and cacheable', async () => {
  const res = await fetch(p.url('workspaces') + '/openapi/assets/scalar.js');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toStartWith('text/javascript');
  const body = await res.text();
  const pinned = ((await import('../../package.json')).default as { dependencies: Record<string, string> }).dependencies['@scalar/api-reference'];
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
  expect(body).toContain(`@scalar/api-reference@${pinned}`);
});
