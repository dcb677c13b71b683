// The default template `bun-typescript` on a machine where no registry answers: its image is made
// from this machine's parts (bun from node_modules, busybox-static, the C library that ldd names,
// git), once per test run by `bun run image:bun-typescript` (tests/helpers/once.ts; the server builds
// it the same way on first use, as the minimal image's first use shows in repo-and-image.test.ts);
// the workspace reaches running, bun runs a TypeScript file inside, git works, and the code-server
// port answers over HTTP. Where a registry answers, the Dockerfile is tried first.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, waitFor } from '../../helpers/docker';
import { createMemoryEngine } from '../../helpers/memory-engine';
import { bunTypescriptImage, type CommandResult } from '../../helpers/once';
import { closeAndClean } from '../../helpers/workspaces';
import { EngineError } from '../../../src/services/workspaces/engine/engine';
import { findBun, registryAnswers, sharedLibraries } from '../../../src/services/workspaces/images/bun-image';
import { buildTemplateImage } from '../../../src/services/workspaces/images/template-image';
import { createTemplateRegistry } from '../../../src/services/workspaces/images/templates';
import { loadWorkspacesConfig } from '../../../src/services/workspaces/workspaces.config';

const ROOT = join(import.meta.dir, '../../..');
// Host ports of their own: other test runs share this engine, and a fresh Keel starts at the range's start.
const portRange = () => {
  const base = 30000 + Math.floor(Math.random() * 300) * 100;
  return `${base}-${base + 99}`;
};
let image: CommandResult & { tag: string };
let p: TestPlatform;
let ws: any;

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p.api('workspaces', path, init);
async function exec(command: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const res = await api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command, timeout: 60_000 } });
  expect(res.status).toBe(200);
  return (await res.json()) as any;
}

beforeAll(async () => {
  image = await bunTypescriptImage();
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_BUN_IMAGE: image.tag, APP_WORKSPACE_PORT_RANGE: portRange() } });
}, 240_000);

afterAll(async () => {
  await closeAndClean(p);
});

describe('a bun-typescript workspace where no registry answers', () => {
  test('this machine has no registry: the offline path is the one under test', async () => {
    expect(await registryAnswers()).toBe(false);
  });

  test('is created with the default template and reaches running on the offline image', async () => {
    const res = await api('/api/workspaces', { method: 'POST', json: { name: 'bun-ts' } }); // no template: the default
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    ws = await waitFor(`workspace ${id} to settle`, async () => {
      const w = (await (await api(`/api/workspaces/${id}`)).json()) as any;
      return w.status === 'running' || w.status === 'failed' ? w : null;
    }, 120_000, 250);
    expect(ws.reason ?? null).toBeNull();
    expect(ws.status).toBe('running');
    expect(ws.template).toBe('bun-typescript');
    const built = inspect('image', image.tag);
    expect(built.Config.Labels['dev.keel.build']).toBe('offline');
    expect(built.Config.User).toBe('1000:1000');
    expect(inspect('container', ws.containerId).Config.Image).toBe(image.tag);
  }, 150_000);

  test('bun runs a TypeScript file inside, as the workspace user', async () => {
    const write = await exec(`printf '%s\\n' 'const n: number = 6 * 7;' 'console.log(\`answer=\${n} bun=\${Bun.version}\`);' > /tmp/x.ts`);
    expect(write.exitCode).toBe(0);
    const r = await exec('bun run /tmp/x.ts');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^answer=42 bun=\d+\.\d+\.\d+\n$/);
    expect((await exec('id -u; echo $HOME; pwd')).stdout).toBe('1000\n/home/keel\n/workspace\n');
  });

  test("bun's test runner and TypeScript imports work offline", async () => {
    await exec(`mkdir -p /workspace/app && printf '%s\\n' 'export const add = (a: number, b: number): number => a + b;' > /workspace/app/add.ts`);
    await exec(`printf '%s\\n' 'import { expect, test } from "bun:test";' 'import { add } from "./add.ts";' 'test("adds", () => expect(add(2, 3)).toBe(5));' > /workspace/app/add.test.ts`);
    const r = await exec('cd /workspace/app && bun test 2>&1');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('1 pass');
  });

  test('git works inside: init, commit, clone', async () => {
    const r = await exec('cd /tmp && git init -q r && cd r && echo hi > a && git add a && git -c user.name=k -c user.email=k@k commit -qm first && git clone -q /tmp/r /tmp/r2 && cat /tmp/r2/a && git --version');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^hi\ngit version \d/);
  });

  test('something answers on the code-server port over HTTP and shows the workspace', async () => {
    await exec('echo "hello from the workspace" > /workspace/hello.txt');
    const base = (ws.urls.codeServer as string).replace('@localhost', '@127.0.0.1').replace(/\/$/, '');
    // The service starts beside the main command; it may take a moment after `running`.
    const index = await waitFor('the code server to answer', () => fetch(base + '/').then((r) => (r.status === 200 ? r : null), () => null), 30_000, 200);
    expect(index.headers.get('x-keel-code-server')).toBe('offline');
    expect(await index.text()).toContain('hello.txt');
    const file = await fetch(base + '/hello.txt');
    expect(await file.text()).toBe('hello from the workspace\n');
    // Confined to /workspace.
    expect((await fetch(base + '/..%2f..%2fetc%2fpasswd')).status).toBe(404);
    expect((await fetch(base + '/hello.txt', { method: 'PUT', body: 'x' })).status).toBe(405);
    // Only to the workspace's secret (the credentials in urls.codeServer).
    expect((await fetch(`http://127.0.0.1:${ws.port}/hello.txt`)).status).toBe(401);
  });

  test('the code server shows in the workspace logs as its own service', async () => {
    const res = await api(`/api/workspaces/${ws.id}/logs?service=code-server&tail=20`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('keel offline code server on :8080');
  });
});

describe('where a registry answers', () => {
  // The engine here is the in-memory one: the real one cannot pull the Dockerfile's base image on
  // this machine either, and making the offline image a second time per run (the real build is
  // above) would only repeat it. The parts read from this machine are real.
  test('the Dockerfile is tried first, and when its build cannot finish the offline image is made instead', async () => {
    let probes = 0;
    const registry = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => (probes++, new Response('{"errors":[]}', { status: 401 })) });
    try {
      const engine = createMemoryEngine();
      engine.failNext('buildImage', new EngineError('pull access denied for oven/bun, repository does not exist', 'failed'));
      const warnings: string[] = [];
      const log = { info() {}, warn: (m: string) => void warnings.push(m) };
      const settings = loadWorkspacesConfig({ APP_REGISTRY_PROBE_URL: `http://127.0.0.1:${registry.port}/v2/` });
      const tag = 'keel/bun-typescript-fallback:memory';
      expect(await buildTemplateImage(engine, createTemplateRegistry().get('bun-typescript')!, tag, settings, log)).toBe(true);
      expect(probes).toBe(1);
      expect(engine.calls.filter((c) => c === 'buildImage' || c === 'importImage')).toEqual(['buildImage', 'importImage']);
      expect(engine.images.has(tag)).toBe(true);
      expect(warnings).toEqual(['the Dockerfile build failed; building the image offline instead']);
    } finally {
      registry.stop(true);
    }
  });
});

describe('the parts of the offline image', () => {
  test('bun is the one npm installed, and ldd names the C library it needs', () => {
    const bun = findBun();
    expect(bun.startsWith(join(ROOT, 'node_modules'))).toBe(true);
    const libs = sharedLibraries(bun);
    expect(libs.some((l) => /\/libc\.so\.6$/.test(l))).toBe(true);
    expect(libs.some((l) => /\/ld-linux[^/]*\.so\.\d$/.test(l))).toBe(true);
  });

  test('a registry that answers, whatever the status, counts as answering; a closed port does not', async () => {
    const registry = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('{"errors":[]}', { status: 401 }) });
    try {
      expect(await registryAnswers(`http://127.0.0.1:${registry.port}/v2/`)).toBe(true);
    } finally {
      registry.stop(true);
    }
    const closed = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    expect(await registryAnswers(`http://127.0.0.1:${port}/v2/`)).toBe(false);
  });

  test('a registry that never answers is given up on within the timeout, not waited for', async () => {
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
    try {
      expect(await registryAnswers(`http://127.0.0.1:${silent.port}/v2/`, 300)).toBe(false);
    } finally {
      silent.stop(true);
    }
  });
});

describe('bun run image:bun-typescript', () => {
  test('built the image into the engine and said so on one line', () => {
    // This run's one build of the image (beforeAll) was this command.
    expect(image.code).toBe(0);
    expect(image.stdout.trim().split('\n').pop()).toBe(`built ${image.tag}`);
    expect(docker('run', '--rm', image.tag, 'sh', '-c', 'bun --version && git --version >/dev/null && test -f /opt/keel/code-server.ts && id -un').stdout).toMatch(/^\d+\.\d+\.\d+\nkeel$/);
  }, 60_000);

  test('an unknown image name is a usage error: exit 2 with the usage', () => {
    const r = Bun.spawnSync([process.execPath, 'src/cli.ts', 'image', 'nope'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: process.env });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain('usage: keel image minimal|bun-typescript');
  });
});
