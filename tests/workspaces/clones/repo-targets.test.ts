// Where a clone may go: link-local and metadata hosts refused at create in every spelling of the
// address, private and loopback ones refused with APP_CLONE_DENY_PRIVATE (a literal at create, a name
// once resolved), and the global clone queue answering 503 with Retry-After when full.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, waitFor } from '../../helpers/docker';
import { bareRepo, gitDaemon } from '../../helpers/git';
import { closeAndClean } from '../../helpers/workspaces';

let p: TestPlatform;
let strict: TestPlatform;
let gitRoot = '';
let daemon: Awaited<ReturnType<typeof gitDaemon>>;
/** A listener that accepts connections and never answers: a clone to it stays in flight. */
let silent: { port: number; stop(force?: boolean): void };
let silentConnections = 0;

beforeAll(async () => {
  gitRoot = bareRepo('proj', { 'README.md': 'hello\n' });
  daemon = await gitDaemon(gitRoot);
  silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { open: () => void silentConnections++, data() {} } });
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '25500-25549', APP_CLONE_CONCURRENCY: '1', APP_CLONE_QUEUE: '1' } });
  strict = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '25550-25599', APP_CLONE_DENY_PRIVATE: 'true' } });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
  await closeAndClean(strict);
  daemon?.stop();
  silent?.stop(true);
  if (gitRoot) rmSync(gitRoot, { recursive: true, force: true });
});

async function create(on: TestPlatform, name: string, url: string, as = 'alice') {
  const res = await on.api('workspaces', '/api/workspaces', { method: 'POST', json: { name, template: 'minimal', type: 'temporary', repo: { url } }, as });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}
const settled = (on: TestPlatform, id: string) =>
  waitFor(`workspace ${id} to settle`, async () => {
    const w = (await (await on.api('workspaces', `/api/workspaces/${id}`)).json()) as any;
    return w.status === 'running' || w.status === 'failed' ? w : null;
  }, 40_000);
const names = async (on: TestPlatform) => (((await (await on.api('workspaces', '/api/workspaces', { as: 'admin' })).json()) as any).workspaces as any[]).map((w) => w.name);

describe('link-local and metadata hosts', () => {
  const spellings = [
    'http://169.254.169.254/latest/meta-data.git',
    'http://2852039166/x.git',
    'http://0xa9fea9fe/x.git',
    'http://0251.0376.0251.0376/x.git',
    'http://0xa9.0xfe.0xa9.0xfe/x.git',
    'http://169.254.43518/x.git',
    'https://169.254.10.1/x.git',
    'http://[::ffff:169.254.169.254]/x.git',
    'http://[::ffff:a9fe:a9fe]/x.git',
    'http://[64:ff9b::a9fe:a9fe]/x.git',
    'http://[fe80::1]/x.git',
    'http://[fd00:ec2::254]/x.git',
    'http://100.100.100.200/x.git',
    'git://2852039166/x.git',
    'git://0xa9fea9fe:9418/x.git',
    'git://[::ffff:169.254.169.254]/x.git',
  ];

  test.each(spellings)('%s is refused at create with 400, naming no part of the URL', async (url) => {
    const r = await create(p, 'meta', url);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('INVALID_REQUEST');
    expect(r.body.error.details.property).toBe('/repo/url');
    expect(r.body.error.message).toMatch(/link-local|metadata/);
    expect(JSON.stringify(r.body)).not.toContain('x.git');
  });

  test('nothing was created', async () => {
    expect(await names(p)).toEqual([]);
  });
});

describe('other URLs refused at create', () => {
  test.each(['file:///etc/passwd', '/srv/repo.git', 'http://127.0.0.1:1/x.git?access_token=abc', 'http://127.0.0.1:1/x.git#frag', 'git://user:pw@127.0.0.1/x.git', 'ftp://127.0.0.1/x.git'])(
    '%s',
    async (url) => {
      const r = await create(p, 'other', url);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(r.body)).not.toContain('abc');
    },
  );
});

describe('loopback and private targets', () => {
  test('are cloned by default', async () => {
    const r = await create(p, 'loopback-ok', `git://127.0.0.1:${daemon.port}/proj.git`);
    expect(r.status).toBe(201);
    const w = await settled(p, r.body.id);
    expect(w.status).toBe('running');
    expect(docker('exec', w.containerId, 'cat', '/workspace/README.md').stdout).toBe('hello');
    await p.api('workspaces', `/api/workspaces/${w.id}`, { method: 'DELETE' });
  });

  test('with APP_CLONE_DENY_PRIVATE=true an IP literal is refused at create, in any spelling', async () => {
    for (const url of [`git://127.0.0.1:${daemon.port}/proj.git`, 'http://2130706433/x.git', 'http://0x7f.1/x.git', 'http://10.1.2.3/x.git', 'http://[::1]/x.git', 'http://[::ffff:127.0.0.1]/x.git', 'http://0/x.git']) {
      const r = await create(strict, 'private-literal', url);
      expect(r.status).toBe(400);
      expect(r.body.error.message).toContain('private');
    }
    expect(await names(strict)).toEqual([]);
  });

  test('with APP_CLONE_DENY_PRIVATE=true a name that resolves to loopback is refused when cloning, before any connection', async () => {
    const before = silentConnections;
    const r = await create(strict, 'private-name', `http://localhost:${silent.port}/x.git`);
    expect(r.status).toBe(201);
    const w = await settled(strict, r.body.id);
    expect(w.status).toBe('failed');
    expect(w.reason).toBe('git clone refused: the host name resolves to a loopback or private address, refused by the operator; clones may not reach it');
    expect(silentConnections).toBe(before);
  });
});

describe('the clone queue', () => {
  test('past APP_CLONE_CONCURRENCY + APP_CLONE_QUEUE a create with a repo is 503 with Retry-After and creates nothing', async () => {
    const hanging = `http://127.0.0.1:${silent.port}/slow.git`;
    const a = await create(p, 'q-running', hanging);
    const b = await create(p, 'q-waiting', hanging, 'bob');
    expect([a.status, b.status]).toEqual([201, 201]);
    await waitFor('the first clone to connect', () => silentConnections > 0);
    const c = await create(p, 'q-refused', hanging, 'carol');
    expect(c.status).toBe(503);
    expect(c.headers.get('retry-after')).toBe('10');
    expect(c.body.error.code).toBe('CLONE_QUEUE_FULL');
    expect(await names(p)).not.toContain('q-refused');
    // A workspace without a repo needs no clone place.
    const plain = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'q-plain', template: 'minimal', type: 'temporary' }, as: 'carol' });
    expect(plain.status).toBe(201);
    // Deleting the running clone frees its place: the waiting one runs, and one more may wait.
    expect((await p.api('workspaces', `/api/workspaces/${a.body.id}`, { method: 'DELETE' })).status).toBe(200);
    const d = await create(p, 'q-after', hanging, 'carol');
    expect(d.status).toBe(201);
    expect((await create(p, 'q-full-again', hanging, 'dave')).status).toBe(503);
    // Deleting a create that still waits for its clone takes it out of the queue: its place is free at once.
    expect((await p.api('workspaces', `/api/workspaces/${d.body.id}`, { method: 'DELETE', as: 'carol' })).status).toBe(200);
    const f = await create(p, 'q-after-wait', hanging, 'dave');
    expect(f.status).toBe(201);
    for (const [id, as] of [[b.body.id, 'bob'], [f.body.id, 'dave'], [((await plain.json()) as any).id, 'carol']]) {
      await p.api('workspaces', `/api/workspaces/${id}`, { method: 'DELETE', as });
    }
    // Every place is back.
    const e = await create(p, 'q-again', `git://127.0.0.1:${daemon.port}/proj.git`);
    expect(e.status).toBe(201);
    expect((await settled(p, e.body.id)).status).toBe('running');
    await p.api('workspaces', `/api/workspaces/${e.body.id}`, { method: 'DELETE' });
  }, 60_000);
});
