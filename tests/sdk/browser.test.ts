// @keel/sdk in a browser: the installed tarball bundled for the browser by Bun (no Node built-in may
// be pulled in), loaded into Chromium on a page of the workspace API's origin, then a workspace
// created, a command streamed, a file written and read back (text and bytes), a terminal typed
// into and resized, an error as
// KeelError, the workspace deleted: fetch and ReadableStream only.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean } from '../helpers/workspaces';
import { launchBrowser, type TestBrowser } from '../ui/browser';
import { nodeProject } from './sdk-helpers';

let p: TestPlatform;
let project: Awaited<ReturnType<typeof nodeProject>>;
let browser: TestBrowser;

beforeAll(async () => {
  requireTestEnv('DOCKER_HOST');
  [p, project, browser] = await Promise.all([
    startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '23580-23669' } }),
    nodeProject(),
    launchBrowser(),
  ]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await closeAndClean(p);
  project?.remove();
}, 60_000);

test('the SDK bundles for the browser without Node built-ins and works there', async () => {
  writeFileSync(join(project.dir, 'entry.js'), "import { Keel, KeelError } from '@keel/sdk';\nglobalThis.KeelSDK = { Keel, KeelError };\n");
  const built = await Bun.build({ entrypoints: [join(project.dir, 'entry.js')], target: 'browser', format: 'iife', minify: false });
  expect(built.logs.filter((l) => l.level === 'error')).toEqual([]);
  expect(built.success).toBe(true);
  const bundle = await built.outputs[0]!.text();
  expect(bundle).not.toMatch(/from\s*["']node:|require\(["']node:/);

  const { page, console: messages } = await browser.page();
  await page.goto(p.url('workspaces') + '/health');
  await page.evaluate(bundle);
  const out = await page.evaluate(
    async ({ token, name }) => {
      const { Keel, KeelError } = (globalThis as any).KeelSDK;
      const keel = new Keel({ url: location.origin, token });
      const result: Record<string, unknown> = {};
      try {
        await keel.workspaces.get('ws_nope');
      } catch (e: any) {
        result.error = { isKeelError: e instanceof KeelError, status: e.status, code: e.code };
      }
      const ws = await keel.workspaces.create({ name, template: 'minimal' });
      result.status = ws.status;
      const seen: string[] = [];
      const r = await ws.commands.run('echo from-the-browser; exit 2', { onStdout: (t: string) => seen.push(t) });
      result.run = { exitCode: r.exitCode, streamed: seen.join('') };
      await ws.files.write('b.txt', 'typed in a page');
      result.text = await ws.files.readText('b.txt');
      const bytes = await ws.files.read('b.txt');
      result.bytes = bytes instanceof Uint8Array ? bytes.length : -1;
      // A terminal over the page's WebSocket: typed in, its output decoded, resized, exited.
      let screen = '';
      const dec = new TextDecoder();
      const term = await ws.terminal.open({ cols: 90, rows: 20, onData: (d: Uint8Array) => (screen += dec.decode(d, { stream: true })) });
      term.write('echo term-$((6*7)); stty size\n');
      for (let i = 0; i < 100 && !screen.includes('20 90'); i++) await new Promise((r) => setTimeout(r, 50));
      term.resize(100, 30);
      term.write('stty size; exit\n');
      result.closeCode = await term.closed;
      result.terminal = { answered: screen.includes('term-42'), first: screen.includes('20 90'), resized: screen.includes('30 100') };
      result.deleted = (await ws.delete()).deleted;
      return result;
    },
    { token: p.token('alice'), name: `sdk-browser-${Date.now().toString(36)}` },
  );
  expect(out).toEqual({
    error: { isKeelError: true, status: 404, code: 'WORKSPACE_NOT_FOUND' },
    status: 'running',
    run: { exitCode: 2, streamed: 'from-the-browser\n' },
    text: 'typed in a page',
    bytes: 15,
    closeCode: 1000,
    terminal: { answered: true, first: true, resized: true },
    deleted: true,
  });
  // The 404 the test asked for is the only complaint the page may log.
  expect(messages.filter((m) => !m.includes('404'))).toEqual([]);
}, 90_000);
