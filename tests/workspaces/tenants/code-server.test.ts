// The code server behind urls.codeServer answers only to the workspace's secret, which only its owner
// (or an admin) is shown: the `minimal` template's busybox httpd through the engine, and the
// bun-typescript template's own code-server.ts run as a process here.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, waitFor } from '../../helpers/docker';
import { ROOT } from '../../helpers/process';
import { closeAndClean, createRunning, getWorkspace } from '../../helpers/workspaces';

let p: TestPlatform;
let alices: any;
let bobs: any;

const local = (url: string) => url.replace('@localhost:', '@127.0.0.1:');
const bare = (ws: any) => `http://127.0.0.1:${ws.port}`;
const secretOf = (ws: any) => new URL(ws.urls.codeServer).password;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '26900-26949' } });
  [alices, bobs] = await Promise.all([createRunning(p, 'tn-code-alice'), createRunning(p, 'tn-code-bob', { as: 'bob' })]);
  expect(docker('exec', alices.containerId, 'sh', '-c', 'echo "alice private notes" > /workspace/notes.txt').code).toBe(0);
  // The service starts beside the main command: wait until it answers at all.
  await waitFor('the code server to answer', () => fetch(`${local(alices.urls.codeServer)}/notes.txt`).then((r) => r.status === 200, () => false), 20_000);
}, 120_000);

afterAll(() => closeAndClean(p));

describe('the minimal template code server', () => {
  test('urls.codeServer carries a per-workspace secret as HTTP Basic credentials', () => {
    expect(alices.urls.codeServer).toMatch(new RegExp(`^http://keel:[A-Za-z0-9_-]{43}@localhost:${alices.port}$`));
    expect(secretOf(alices)).not.toBe(secretOf(bobs));
  });

  test('with the secret: served', async () => {
    const res = await fetch(`${local(alices.urls.codeServer)}/notes.txt`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('alice private notes\n');
  });

  test('without the secret, with a wrong one, or with another workspace\'s: 401 and nothing of the workspace', async () => {
    const attempts: RequestInit[] = [
      {},
      { headers: { authorization: `Basic ${btoa('keel:not-the-secret')}` } },
      { headers: { authorization: `Basic ${btoa(`keel:${secretOf(bobs)}`)}` } },
      { headers: { authorization: `Basic ${btoa(`bob:${secretOf(alices)}`)}` } },
    ];
    for (const init of attempts) {
      // (busybox httpd answers 404 for a directory without index.html before asking: nothing to read there.)
      for (const path of ['/notes.txt', '/no-such-file.txt']) {
        const res = await fetch(`${bare(alices)}${path}`, init);
        expect(res.status).toBe(401);
        expect(await res.text()).not.toContain('alice private notes');
      }
    }
  });

  test("another actor's token: the workspace, and so its secret, is 404", async () => {
    const seen = await getWorkspace(p, alices.id, 'bob');
    expect(seen.status).toBe(404);
    expect(JSON.stringify(seen.body)).not.toContain(secretOf(alices));
    const list = await p.api('workspaces', '/api/workspaces', { as: 'bob' });
    const text = await list.text();
    expect(text).toContain(secretOf(bobs));
    expect(text).not.toContain(secretOf(alices));
    // The owner and an admin see it.
    expect((await getWorkspace(p, alices.id, 'alice')).body.urls.codeServer).toBe(alices.urls.codeServer);
    expect((await getWorkspace(p, alices.id, 'admin')).body.urls.codeServer).toBe(alices.urls.codeServer);
  });

  test('the secret is stable across a stop and start (the container is made with it)', async () => {
    expect(docker('exec', bobs.containerId, 'sh', '-c', 'echo bob > /workspace/bob.txt').code).toBe(0);
    expect((await p.api('workspaces', `/api/workspaces/${bobs.id}/stop`, { method: 'POST', as: 'bob' })).status).toBe(200);
    await waitFor('bob stopped', async () => (await getWorkspace(p, bobs.id, 'bob')).body.status === 'stopped', 30_000);
    expect((await p.api('workspaces', `/api/workspaces/${bobs.id}/start`, { method: 'POST', as: 'bob' })).status).toBe(200);
    const again = await waitFor('bob running', async () => {
      const w = (await getWorkspace(p, bobs.id, 'bob')).body;
      return w.status === 'running' ? w : null;
    }, 30_000);
    expect(again.urls.codeServer).toBe(bobs.urls.codeServer);
    const res = await waitFor('bob code server', () => fetch(`${local(again.urls.codeServer)}/bob.txt`).then((r) => (r.status === 200 ? r : null), () => null), 20_000);
    expect(await res.text()).toBe('bob\n');
    expect((await fetch(`${bare(bobs)}/bob.txt`)).status).toBe(401);
  });
});

describe("the bun-typescript template's code-server.ts", () => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-code-server-'));
  writeFileSync(join(dir, 'hello.txt'), 'hello\n');
  const procs: ReturnType<typeof Bun.spawn>[] = [];

  /** Runs templates/bun-typescript/code-server.ts on a free port; its base URL. */
  async function serve(secret: string | undefined): Promise<string> {
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() });
    const port = probe.port;
    probe.stop(true);
    const env: Record<string, string> = { ...(process.env as Record<string, string>), KEEL_WORKSPACE: dir, PORT: String(port) };
    if (secret === undefined) delete env.KEEL_CODE_SECRET;
    else env.KEEL_CODE_SECRET = secret;
    const proc = Bun.spawn([process.execPath, join(ROOT, 'templates/bun-typescript/code-server.ts')], { env, stdout: 'ignore', stderr: 'ignore' });
    procs.push(proc);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('code-server.ts to listen', () => fetch(base).then(() => true, () => false), 15_000);
    return base;
  }

  afterAll(() => {
    for (const proc of procs) proc.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('answers with the secret (Basic or Bearer) and 401 without it', async () => {
    const secret = 'S'.repeat(43);
    const base = await serve(secret);
    expect((await fetch(`${base}/hello.txt`)).status).toBe(401);
    expect((await fetch(`${base}/hello.txt`)).headers.get('www-authenticate')).toContain('Basic');
    expect((await fetch(`${base}/hello.txt`, { headers: { authorization: `Basic ${btoa('keel:wrong')}` } })).status).toBe(401);
    expect((await fetch(`${base}/hello.txt`, { headers: { authorization: `Bearer ${secret}x` } })).status).toBe(401);
    const basic = await fetch(`${base.replace('://', `://keel:${secret}@`)}/hello.txt`);
    expect(basic.status).toBe(200);
    expect(await basic.text()).toBe('hello\n');
    expect((await fetch(`${base}/hello.txt`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
  });

  test('without a secret it serves nothing, whatever is sent', async () => {
    const base = await serve(undefined);
    expect((await fetch(`${base}/hello.txt`)).status).toBe(401);
    expect((await fetch(`${base}/hello.txt`, { headers: { authorization: `Basic ${btoa('keel:')}` } })).status).toBe(401);
    expect((await fetch(`${base}/hello.txt`, { headers: { authorization: 'Bearer ' } })).status).toBe(401);
  });
});
