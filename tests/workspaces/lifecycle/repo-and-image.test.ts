// Repos cloned into new workspaces from a git daemon on loopback, clone failures that end visibly in
// `failed` with the scrubbed git error, and the minimal image built on first use when the engine lacks it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, waitFor } from '../../helpers/docker';
import { closeAndClean } from '../../helpers/workspaces';

const IMAGE = `keel/minimal-test:${Date.now().toString(36)}`;
let p: TestPlatform;
let gitRoot = '';
let gitPort = 0;
let daemon: ReturnType<typeof Bun.spawn> | undefined;

function git(cwd: string, ...args: string[]) {
  const r = Bun.spawnSync(['git', ...args], { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
}

beforeAll(async () => {
  // A repository with two branches, served read-only by git daemon on loopback.
  gitRoot = mkdtempSync(join(tmpdir(), 'keel-git-'));
  const work = join(gitRoot, 'work');
  Bun.spawnSync(['mkdir', '-p', work]);
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(join(work, 'README.md'), 'on main\n');
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'main');
  git(work, 'checkout', '-q', '-b', 'feature');
  writeFileSync(join(work, 'FEATURE.txt'), 'on feature\n');
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'feature');
  git(gitRoot, 'clone', '-q', '--bare', work, join(gitRoot, 'proj.git'));
  git(join(gitRoot, 'proj.git'), 'symbolic-ref', 'HEAD', 'refs/heads/main');
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  gitPort = probe.port;
  probe.stop(true);
  daemon = Bun.spawn(['git', 'daemon', '--export-all', '--reuseaddr', `--base-path=${gitRoot}`, '--listen=127.0.0.1', `--port=${gitPort}`, gitRoot], { stdout: 'ignore', stderr: 'ignore' });
  await waitFor('git daemon to listen', async () => {
    const r = Bun.spawnSync(['git', 'ls-remote', `git://127.0.0.1:${gitPort}/proj.git`], { stdout: 'pipe', stderr: 'pipe' });
    return r.exitCode === 0;
  }, 10_000, 200);

  docker('rmi', '-f', IMAGE);
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_MINIMAL_IMAGE: IMAGE, APP_WORKSPACE_CLONE_TIMEOUT: '3' } });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
  daemon?.kill();
  docker('rmi', '-f', IMAGE);
  if (gitRoot) rmSync(gitRoot, { recursive: true, force: true });
});

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p.api('workspaces', path, init);
async function create(body: Record<string, unknown>) {
  const res = await api('/api/workspaces', { method: 'POST', json: { template: 'minimal', ...body } });
  return { status: res.status, body: (await res.json()) as any };
}
async function settled(id: string) {
  return waitFor(`workspace ${id} to settle`, async () => {
    const w = (await (await api(`/api/workspaces/${id}`)).json()) as any;
    return w.status === 'running' || w.status === 'failed' ? w : null;
  }, 40_000);
}

describe('the minimal image', () => {
  test('is built on first use when the engine lacks it', async () => {
    expect(inspect('image', IMAGE)).toBeNull();
    const r = await create({ name: 'first-use' });
    expect(r.status).toBe(201);
    const w = await settled(r.body.id);
    expect(w.status).toBe('running');
    const image = inspect('image', IMAGE);
    expect(image.Config.User).toBe('1000:1000');
    expect(inspect('container', w.containerId).Config.Image).toBe(IMAGE);
    await api(`/api/workspaces/${w.id}?volumes=true`, { method: 'DELETE' });
  });
});

describe('bun run image:minimal', () => {
  test('builds the minimal image offline and says so', () => {
    const r = Bun.spawnSync([process.execPath, 'src/cli.ts', 'image', 'minimal'], { cwd: join(import.meta.dir, '../../..'), stdout: 'pipe', stderr: 'pipe', env: process.env });
    expect(r.stderr.toString()).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString().trim()).toBe('built keel/minimal:1');
    const image = inspect('image', 'keel/minimal:1');
    expect(image.Config.WorkingDir).toBe('/workspace');
    expect(image.Config.Labels['dev.keel.image']).toBe('minimal');
    expect(docker('run', '--rm', 'keel/minimal:1', 'sh', '-c', 'id -un; test -d /tmp && test -w /workspace && echo ok').stdout).toBe('keel\nok');
  });

  test('builds the tag the server would use (APP_WORKSPACE_MINIMAL_IMAGE)', () => {
    const tag = 'keel/minimal-cli-test:1';
    const r = Bun.spawnSync([process.execPath, 'src/cli.ts', 'image', 'minimal'], { cwd: join(import.meta.dir, '../../..'), stdout: 'pipe', stderr: 'pipe', env: { ...process.env, APP_WORKSPACE_MINIMAL_IMAGE: tag } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString().trim()).toBe(`built ${tag}`);
    expect(inspect('image', tag)).not.toBeNull();
    docker('rmi', tag);
  });

  test('a busybox that is not statically linked is refused with the reason', () => {
    const r = Bun.spawnSync([process.execPath, 'src/cli.ts', 'image', 'minimal'], { cwd: join(import.meta.dir, '../../..'), stdout: 'pipe', stderr: 'pipe', env: { ...process.env, APP_WORKSPACE_MINIMAL_IMAGE: 'keel/minimal-never:1', APP_BUSYBOX_PATH: process.execPath } });
    expect(r.exitCode).toBe(1);
    expect(r.stderr.toString()).toContain('is not statically linked');
    expect(inspect('image', 'keel/minimal-never:1')).toBeNull();
  });
});

describe('repos', () => {
  test('the requested branch is cloned into /workspace, owned by the workspace user', async () => {
    const r = await create({ name: 'with-repo', repo: { url: `git://127.0.0.1:${gitPort}/proj.git`, branch: 'feature' } });
    expect(r.status).toBe(201);
    const w = await settled(r.body.id);
    expect(w.status).toBe('running');
    expect(docker('exec', w.containerId, 'cat', '/workspace/FEATURE.txt').stdout).toBe('on feature');
    expect(docker('exec', w.containerId, 'cat', '/workspace/README.md').stdout).toBe('on main');
    expect(docker('exec', w.containerId, 'stat', '-c', '%u:%g', '/workspace/FEATURE.txt', '/workspace/.git').stdout).toBe('1000:1000\n1000:1000');
    await api(`/api/workspaces/${w.id}?volumes=true`, { method: 'DELETE' });
  });

  test('without a branch the remote HEAD is cloned', async () => {
    const r = await create({ name: 'repo-head', type: 'temporary', repo: { url: `git://127.0.0.1:${gitPort}/proj.git` } });
    const w = await settled(r.body.id);
    expect(w.status).toBe('running');
    expect(docker('exec', w.containerId, 'sh', '-c', 'cat /workspace/README.md; test -e /workspace/FEATURE.txt && echo has-feature || echo no-feature').stdout).toBe('on main\nno-feature');
    await api(`/api/workspaces/${w.id}`, { method: 'DELETE' });
  });

  test('a missing branch ends in failed with git\'s reason', async () => {
    const r = await create({ name: 'bad-branch', repo: { url: `git://127.0.0.1:${gitPort}/proj.git`, branch: 'nope' } });
    const w = await settled(r.body.id);
    expect(w.status).toBe('failed');
    expect(w.reason).toContain('git clone failed');
    expect(w.reason).toContain('nope');
    expect(w.containerId).toBeNull();
  });

  test('a URL carrying a query is refused at create without echoing it', async () => {
    const r = await create({ name: 'query-creds', repo: { url: `http://127.0.0.1:${gitPort + 1}/nothing.git?access_token=s3cr3t-q` } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).not.toContain('s3cr3t');
  });

  test('a failed clone never shows the credentials of its URL', async () => {
    const r = await create({ name: 'bad-creds', repo: { url: `http://robot:s3cr3t-t0ken@127.0.0.1:${gitPort + 1}/nothing.git` } });
    expect(r.status).toBe(201);
    expect(JSON.stringify(r.body)).not.toContain('s3cr3t');
    const w = await settled(r.body.id);
    expect(w.status).toBe('failed');
    expect(w.reason).toContain('git clone failed');
    const everything = JSON.stringify(await (await api('/api/workspaces')).json()) + JSON.stringify(w);
    expect(everything).not.toContain('s3cr3t');
  });

  test('a clone that hangs is cut at APP_WORKSPACE_CLONE_TIMEOUT and ends failed', async () => {
    // A server that accepts connections and never answers.
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
    try {
      const started = Date.now();
      const r = await create({ name: 'hangs', repo: { url: `http://127.0.0.1:${silent.port}/slow.git` } });
      const w = await settled(r.body.id);
      expect(w.status).toBe('failed');
      expect(w.reason).toBe('git clone did not finish within 3 s');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      silent.stop(true);
    }
  });

  test('deleting a workspace whose clone is still running cancels the clone at once', async () => {
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
    try {
      const r = await create({ name: 'cancelled', repo: { url: `http://127.0.0.1:${silent.port}/slow.git` } });
      await Bun.sleep(300); // the clone has begun
      const started = Date.now();
      const del = await api(`/api/workspaces/${r.body.id}?volumes=true`, { method: 'DELETE' });
      expect(del.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2500); // well before the 3 s clone deadline
      expect(docker('ps', '-aq', '--filter', `label=dev.keel.workspace=${r.body.id}`).stdout).toBe('');
      expect(docker('volume', 'ls', '-q', '--filter', `label=dev.keel.workspace=${r.body.id}`).stdout).toBe('');
    } finally {
      silent.stop(true);
    }
  });

  test('a workspace that failed at creation refuses start and stop with 409 and can be deleted', async () => {
    const list = ((await (await api('/api/workspaces?status=failed')).json()) as any).workspaces;
    const failed = list.find((x: any) => x.name === 'bad-branch');
    for (const op of ['start', 'stop', 'restart']) {
      const res = await api(`/api/workspaces/${failed.id}/${op}`, { method: 'POST' });
      expect(res.status).toBe(409);
      expect(((await res.json()) as any).error.code).toBe('INVALID_TRANSITION');
    }
    const del = await api(`/api/workspaces/${failed.id}?volumes=true`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(docker('volume', 'ls', '-q', '--filter', `label=dev.keel.workspace=${failed.id}`).stdout).toBe('');
  });
});
