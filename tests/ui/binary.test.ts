// The pages in the single binary: `bun run build` embeds the dashboard's built files (a define)
// and the reference UI's script (a file import, read from the executable's own $bunfs), and the
// binary serves both; the dashboard's script stays under 100 kB.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keelBinary } from '../helpers/once';
import { ROOT, startKeel, type KeelProcess } from '../helpers/process';
import { launchBrowser, type TestBrowser } from './browser';

const dir = mkdtempSync(join(tmpdir(), 'keel-ui-bin-'));
let binary: string;
let keel: KeelProcess;
let b: TestBrowser;

beforeAll(async () => {
  // Built once per test run, shared with the other binary test (helpers/once.ts).
  binary = await keelBinary();
  keel = await startKeel([binary], { APP_DATA_DIR: join(dir, 'data') }, ['workspaces']);
  b = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await b?.close();
  await keel?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('the binary serves the dashboard with its script under 100 kB, and the sign-in page renders offline', async () => {
  const base = keel.urls.workspaces!;
  const res = await fetch(base + '/ui');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
  const html = await res.text();
  const assets = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
  let scriptBytes = 0;
  for (const a of assets) {
    const r = await fetch(base + a);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toContain('immutable');
    if (a.endsWith('.js')) scriptBytes += (await r.arrayBuffer()).byteLength;
  }
  expect(scriptBytes).toBeGreaterThan(0);
  expect(scriptBytes).toBeLessThan(100_000);

  const { page, outside } = await b.page();
  await page.goto(base + '/ui');
  await page.getByLabel('Token', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
  expect(outside).toEqual([]);
}, 60_000);

test('the binary serves the reference UI\'s script, byte for byte the pinned package\'s', async () => {
  const res = await fetch(keel.urls.workspaces + '/openapi/assets/scalar.js');
  expect(res.status).toBe(200);
  const served = new Uint8Array(await res.arrayBuffer());
  const packaged = readFileSync(join(ROOT, 'node_modules/@scalar/api-reference/dist/browser/standalone.js'));
  expect(served.byteLength).toBe(packaged.byteLength);
  expect(Buffer.from(served).equals(packaged)).toBe(true);
  const page = await fetch(keel.urls.workspaces + '/openapi');
  expect(await page.text()).toContain('src="/openapi/assets/scalar.js"');
});
