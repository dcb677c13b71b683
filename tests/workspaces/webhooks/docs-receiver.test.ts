// The receiver examples of docs/webhooks.md, run as written against real deliveries from Keel: the
// library one as its own process (both signatures checked, 401 otherwise), the node:crypto one as
// a module.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { ROOT } from '../../helpers/process';
import { waitFor } from '../../helpers/docker';
import { closeAndClean } from '../../helpers/workspaces';
import { closedPort, startReceiver } from './receiver';

const blocks = [...readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
// Written beside the packages so the examples' imports resolve as they would in a receiver's project.
const files = [join(ROOT, 'node_modules', `.keel-docs-receiver-${process.pid}.ts`), join(ROOT, 'node_modules', `.keel-docs-verify-${process.pid}.ts`)];
const SECRET = 'whsec_' + Buffer.from('docs-example-secret-bytes-0123456789').toString('base64');
let p: TestPlatform;
let receiver: ReturnType<typeof Bun.spawn> | undefined;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_RETRY_SCHEDULE: '0' } });
});
afterAll(async () => {
  receiver?.kill();
  await closeAndClean(p);
  for (const f of files) rmSync(f, { force: true });
});

const log = async (as: string, id: string) => ((await (await p.api('workspaces', `/api/webhooks/${id}/deliveries`, { as })).json()) as any).deliveries as any[];

test('the library receiver of the docs accepts a real delivery and refuses one signed with another secret', async () => {
  expect(blocks.length).toBeGreaterThanOrEqual(2);
  writeFileSync(files[0]!, blocks[0]!);
  const port = closedPort();
  receiver = Bun.spawn([process.execPath, files[0]!], { env: { ...process.env, PORT: String(port), KEEL_WEBHOOK_SECRET: SECRET }, stdout: 'pipe', stderr: 'inherit' });
  await waitFor('the docs receiver', () => fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }).then((r) => r.status === 401).catch(() => false));
  for (const [as, secret, expected] of [['doc-ok', SECRET, 204], ['doc-bad', 'another-secret-altogether', 401]] as const) {
    const w = (await (await p.api('workspaces', '/api/webhooks', { method: 'POST', as, json: { url: `http://127.0.0.1:${port}/`, events: ['*'], secret } })).json()) as any;
    await p.api('workspaces', `/api/webhooks/${w.id}/ping`, { method: 'POST', as });
    await waitFor(`${as} answered`, async () => (await log(as, w.id))[0]?.responseStatus === expected);
  }
});

test('the node:crypto check of the docs verifies a real delivery and nothing else', async () => {
  writeFileSync(files[1]!, blocks[1]!);
  const { verifyKeel } = (await import(files[1]!)) as { verifyKeel(secret: string, raw: string, h: Record<string, string>): boolean };
  const rx = startReceiver();
  try {
    for (const secret of [SECRET, 'a-plain-text-secret-for-docs']) {
      const as = `doc-${secret.length}`;
      const w = (await (await p.api('workspaces', '/api/webhooks', { method: 'POST', as, json: { url: `${rx.url}/${as}`, events: ['*'], secret } })).json()) as any;
      await p.api('workspaces', `/api/webhooks/${w.id}/ping`, { method: 'POST', as });
      const [got] = await rx.waitFor('ping', (r) => r.path === `/hook/${as}`);
      expect(verifyKeel(secret, got!.raw, got!.headers)).toBe(true);
      expect(verifyKeel(secret, got!.raw.replace('ping', 'pong'), got!.headers)).toBe(false);
      expect(verifyKeel(secret + 'x', got!.raw, got!.headers)).toBe(false);
    }
  } finally {
    rx.stop();
  }
});
