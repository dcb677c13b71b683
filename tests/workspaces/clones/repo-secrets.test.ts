// Clone credentials and the Keel user's own git set-up, through a Keel process of its own whose HOME
// holds a poisoned ~/.gitconfig (insteadOf to another server, a credential helper, an extra header, a
// hooks path): credentials given in a repo URL reach the git server as an Authorization header and
// nothing else (process list, logs, database, failure reason, the workspace's .git/config), and nothing
// of the Keel user's git configuration applies. Also the clone size cap.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';
import { TEST_SECRET } from '../../helpers/platform';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { docker, removeInstanceObjects, keelInstance, waitFor } from '../../helpers/docker';
import { bareRepo, gitHttpServer, type GitHttpServer } from '../../helpers/git';

const USER = 'robot';
const PASS = 's3cr3t/t0k+n-42';
const URL_PASS = encodeURIComponent(PASS);
const HEADER = `Basic ${Buffer.from(`${USER}:${PASS}`).toString('base64')}`;
const SECRETS = [PASS, URL_PASS, HEADER.slice(6), 'wr0ng-pa55'];

let keel: KeelProcess;
let dataDir = '';
let home = '';
let gitRoot = '';
let real: GitHttpServer;
let open: GitHttpServer;
let evil: GitHttpServer;
const marker = () => join(home, 'poison-ran');

beforeAll(async () => {
  gitRoot = bareRepo('proj', { 'README.md': 'cloned over http\n' });
  bareRepo('big', { 'blob.bin': randomBytes(3 * 1024 * 1024) }, gitRoot);
  real = gitHttpServer(gitRoot, { user: USER, pass: PASS });
  open = gitHttpServer(gitRoot);
  evil = gitHttpServer(gitRoot);

  // The Keel user's home, set up the way a developer's might be, and worse.
  home = mkdtempSync(join(tmpdir(), 'keel-home-'));
  mkdirSync(join(home, 'hooks'));
  writeFileSync(join(home, 'hooks', 'post-checkout'), `#!/bin/sh\ntouch ${marker()}\n`, { mode: 0o755 });
  const poisoned =
    `[url "http://127.0.0.1:${evil.port}/"]\n\tinsteadOf = http://127.0.0.1:${real.port}/\n` +
    `[url "http://127.0.0.1:${evil.port}/"]\n\tinsteadOf = http://127.0.0.1:${open.port}/\n` +
    `[credential]\n\thelper = "!f() { touch ${marker()}; echo username=${USER}; echo password=${PASS}; }; f"\n` +
    `[http]\n\textraHeader = X-Poisoned: yes\n` +
    `[core]\n\thooksPath = ${join(home, 'hooks')}\n`;
  writeFileSync(join(home, '.gitconfig'), poisoned);
  mkdirSync(join(home, '.config', 'git'), { recursive: true });
  writeFileSync(join(home, '.config', 'git', 'config'), poisoned);

  dataDir = mkdtempSync(join(tmpdir(), 'keel-secrets-'));
  keel = await startKeel(
    [BUN, 'src/main.ts'],
    { HOME: home, APP_DATA_DIR: dataDir, APP_LOG_LEVEL: 'debug', APP_WORKSPACE_PORT_RANGE: '25450-25499', APP_CLONE_MAX_MB: '1', APP_WORKSPACE_CLONE_TIMEOUT: '60' },
    ['workspaces'],
  );
}, 60_000);

afterAll(async () => {
  const instance = existsSync(join(dataDir, 'workspaces-instance')) ? keelInstance(dataDir) : '';
  await keel?.stop();
  if (instance) removeInstanceObjects(instance);
  for (const s of [real, open, evil]) s?.stop();
  for (const d of [dataDir, home, gitRoot]) if (d) rmSync(d, { recursive: true, force: true });
});

const token = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 3600 });
const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
  fetch(keel.urls.workspaces + path, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
  });
async function create(name: string, url: string) {
  const res = await api('/api/workspaces', { method: 'POST', json: { name, template: 'minimal', repo: { url } } });
  return { status: res.status, body: (await res.json()) as any };
}
const settled = (id: string) =>
  waitFor(`workspace ${id} to settle`, async () => {
    const w = (await (await api(`/api/workspaces/${id}`)).json()) as any;
    return w.status === 'running' || w.status === 'failed' ? w : null;
  }, 60_000);

/** Every byte Keel wrote or keeps: its output and its data dir (database included). */
function everythingKeelHas(): string {
  let all = keel.stdout() + keel.stderr();
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else all += readFileSync(p).toString('latin1');
    }
  };
  walk(dataDir);
  return all;
}
const expectNoSecret = (text: string) => {
  for (const s of SECRETS) expect(text).not.toContain(s);
};

describe('credentials in a repo URL', () => {
  let ws: any;

  test('are sent as an Authorization header and never appear in a process list while the clone runs', async () => {
    let release!: () => void;
    real.hold(new Promise<void>((r) => (release = r)));
    const r = await create('secret-repo', `http://${USER}:${URL_PASS}@127.0.0.1:${real.port}/proj.git`);
    expect(r.status).toBe(201);
    expectNoSecret(JSON.stringify(r.body));
    try {
      // The clone is in flight, held at its first request.
      await waitFor('the clone to reach the server', () => real.seen.length > 0, 30_000);
      const ps = Bun.spawnSync(['ps', '-eww', '-o', 'args'], { stdout: 'pipe' }).stdout.toString();
      expect(ps).toContain(`127.0.0.1:${real.port}/proj.git`);
      expectNoSecret(ps);
    } finally {
      release();
    }
    ws = await settled(r.body.id);
    expect(ws.status).toBe('running');
    expect(real.seen[0]!.authorization).toBe(HEADER);
    expect(docker('exec', ws.containerId, 'cat', '/workspace/README.md').stdout).toBe('cloned over http');
  });

  test('the workspace\'s .git/config names the remote without them', () => {
    const config = docker('exec', ws.containerId, 'cat', '/workspace/.git/config').stdout;
    expect(config).toContain(`url = http://127.0.0.1:${real.port}/proj.git`);
    expect(config.toLowerCase()).not.toContain('extraheader');
    expect(config.toLowerCase()).not.toContain('authorization');
    expectNoSecret(config);
  });

  test('wrong credentials fail with a reason that shows none of them', async () => {
    const r = await create('wrong-creds', `http://${USER}:wr0ng-pa55@127.0.0.1:${real.port}/proj.git`);
    const w = await settled(r.body.id);
    expect(w.status).toBe('failed');
    expect(w.reason).toContain('git clone failed');
    expectNoSecret(JSON.stringify(w) + JSON.stringify(await (await api('/api/workspaces')).json()));
  });

  test('are in none of Keel\'s logs, answers or stored data', () => {
    const all = everythingKeelHas();
    expect(all).toContain('secret-repo'); // the logs and database were read
    expectNoSecret(all);
  });
});

describe('the Keel user\'s git set-up', () => {
  test('neither its insteadOf, credential helper, extra headers nor hooks apply to a clone', async () => {
    // A repo on the server that wants credentials, given none: git must not ask the helper.
    const r = await create('no-creds', `http://127.0.0.1:${real.port}/proj.git`);
    const w = await settled(r.body.id);
    expect(w.status).toBe('failed');
    const o = await create('open-repo', `http://127.0.0.1:${open.port}/proj.git`);
    const ow = await settled(o.body.id);
    expect(ow.status).toBe('running');
    expect(open.seen.length).toBeGreaterThan(0);
    expect(evil.seen).toEqual([]);
    for (const s of [...real.seen, ...open.seen]) expect(s.headers['x-poisoned']).toBeUndefined();
    expect(existsSync(marker())).toBe(false);
  });

  test('ssh URLs are refused at create: Keel never clones with its host\'s SSH identity', async () => {
    for (const url of ['ssh://git@127.0.0.1/proj.git', 'git@127.0.0.1:proj.git']) {
      const r = await create('ssh-repo', url);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
      expect(r.body.error.message).toContain('ssh');
      expect(JSON.stringify(r.body)).not.toContain('127.0.0.1');
    }
  });
});

describe('the clone size cap', () => {
  test('a repo larger than APP_CLONE_MAX_MB ends failed, and nothing of it reaches the workspace', async () => {
    const r = await create('too-big', `http://127.0.0.1:${open.port}/big.git`);
    const w = await settled(r.body.id);
    expect(w.status).toBe('failed');
    expect(w.reason).toBe('git clone stopped: the repository takes more than 1 MiB on disk (APP_CLONE_MAX_MB)');
    expect(w.containerId).toBeNull();
  });
});
