// Workspace lifecycle through HTTP against the real Docker engine, with the `minimal` template:
// create, get with stats, list filters, ownership, start/stop/restart/delete, the state machine,
// ports, volumes, least privilege, and reconciliation with containers changed behind Keel's back.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, waitFor } from '../../helpers/docker';
import { closeAndClean, createRunning, getWorkspace, waitStatus } from '../../helpers/workspaces';

let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '23000-23299' } });
}, 60_000);
afterAll(() => closeAndClean(p));

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p.api('workspaces', path, init);
const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });

async function create(body: Record<string, unknown>, as = 'alice') {
  return json(await api('/api/workspaces', { method: 'POST', json: { template: 'minimal', ...body }, as }));
}

const dexec = (containerId: string, script: string) => docker('exec', containerId, 'sh', '-c', script);

describe('a minimal workspace', () => {
  let ws: any;

  test('create answers 201 with the creation subset and status creating', async () => {
    const res = await api('/api/workspaces', { method: 'POST', json: { name: 'alpha', template: 'minimal' } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'id', 'name', 'port', 'status', 'template', 'type']);
    expect(body).toMatchObject({ name: 'alpha', status: 'creating', template: 'minimal', type: 'persistent' });
    expect(body.port).toBeGreaterThanOrEqual(23000);
    expect(body.port).toBeLessThanOrEqual(23299);
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);
    expect(res.headers.get('location')).toBe(`/api/workspaces/${body.id}`);
    ws = await waitStatus(p, body.id, 'running');
  });

  test('get shows the container, the URLs and live stats', async () => {
    const { status, body } = await getWorkspace(p, ws.id);
    expect(status).toBe(200);
    expect(body.containerId).toMatch(/^[0-9a-f]{64}$/);
    expect(body.urls).toEqual({
      codeServer: expect.stringMatching(new RegExp(`^http://keel:[A-Za-z0-9_-]{43}@localhost:${ws.port}$`)),
      rdp: expect.stringMatching(/^rdp:\/\/localhost:\d+$/),
      ssh: expect.stringMatching(/^ssh -p \d+ keel@localhost$/),
    });
    expect(body.stats.cpu).toMatch(/^\d+\.\d\d%$/);
    expect(body.stats.memory).toMatch(/^[\d.]+(B|KiB|MiB) \/ 256MiB$/);
    expect(body.stats.disk).toMatch(/^[\d.]+(B|KiB|MiB|GiB) \/ [\d.]+(MiB|GiB|TiB)$/);
    expect(body.reason).toBeUndefined();
  });

  test('the code-server port reaches the service the template declares', async () => {
    expect(dexec(ws.containerId, 'echo hello-from-workspace > /workspace/index.html').code).toBe(0);
    const page = await waitFor('the code server to answer', async () => {
      const r = await fetch(`${ws.urls.codeServer.replace('@localhost', '@127.0.0.1')}/index.html`).catch(() => null);
      return r?.ok ? r.text() : null;
    });
    expect(page.trim()).toBe('hello-from-workspace');
  });

  test('the container runs with least privilege and carries Keel labels', () => {
    const c = inspect('container', ws.containerId);
    const h = c.HostConfig;
    expect(h.Privileged).toBe(false);
    expect(h.CapDrop).toEqual(['ALL']);
    expect(h.CapAdd ?? []).toEqual([]);
    expect(h.SecurityOpt).toContain('no-new-privileges:true');
    expect(h.Init).toBe(true);
    expect(h.Memory).toBe(256 * 1024 * 1024);
    expect(h.NanoCpus).toBe(500_000_000);
    expect(h.PidsLimit).toBe(128);
    expect(c.Config.User).toBe('1000:1000');
    expect(c.Config.Labels).toMatchObject({
      'dev.keel.managed': 'true',
      'dev.keel.workspace': ws.id,
      'dev.keel.owner': 'alice',
      'dev.keel.template': 'minimal',
    });
    for (const bindings of Object.values(h.PortBindings) as { HostIp: string }[][]) expect(bindings[0]!.HostIp).toBe('127.0.0.1');
    expect(h.PortBindings['8080/tcp'][0].HostPort).toBe(String(ws.port));
    // The workspace's volume, and keeld's (the workspace daemon), read-only.
    const mounts = c.Mounts.map((m: any) => [m.Destination, m.RW]).sort();
    expect(mounts).toEqual([['/.keel', false], ['/workspace', true]]);
    expect(JSON.stringify(c.Mounts)).not.toContain('docker.sock');
    expect(dexec(ws.containerId, 'id -u').stdout).toBe('1000');
  });

  test('start on a running workspace answers 409 INVALID_TRANSITION', async () => {
    const { status, body } = await json(await api(`/api/workspaces/${ws.id}/start`, { method: 'POST' }));
    expect(status).toBe(409);
    expect(body.error.code).toBe('INVALID_TRANSITION');
    expect(body.error.details).toMatchObject({ status: 'running', operation: 'start', allowedFrom: ['stopped', 'failed'] });
  });

  test('a file in the persistent volume survives stop and start', async () => {
    expect(dexec(ws.containerId, 'echo kept > /workspace/note.txt').code).toBe(0);
    const stop = await json(await api(`/api/workspaces/${ws.id}/stop`, { method: 'POST' }));
    expect(stop).toEqual({ status: 200, body: { id: ws.id, status: 'stopping' } });
    const stopped = await waitStatus(p, ws.id, 'stopped');
    expect(stopped.stats.cpu).toBe('0.00%');
    expect(inspect('container', ws.containerId).State.Running).toBe(false);

    const again = await json(await api(`/api/workspaces/${ws.id}/stop`, { method: 'POST' }));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('INVALID_TRANSITION');

    const start = await json(await api(`/api/workspaces/${ws.id}/start`, { method: 'POST' }));
    expect(start).toEqual({ status: 200, body: { id: ws.id, status: 'starting' } });
    const back = await waitStatus(p, ws.id, 'running');
    expect(dexec(back.containerId, 'cat /workspace/note.txt').stdout).toBe('kept');
  });

  test('restart answers restarting and comes back running', async () => {
    const before = inspect('container', ws.containerId).State.StartedAt;
    const r = await json(await api(`/api/workspaces/${ws.id}/restart`, { method: 'POST' }));
    expect(r).toEqual({ status: 200, body: { id: ws.id, status: 'restarting' } });
    await waitStatus(p, ws.id, 'running');
    expect(inspect('container', ws.containerId).State.StartedAt).not.toBe(before);
  });

  test('force stop kills the workspace with SIGKILL', async () => {
    const r = await json(await api(`/api/workspaces/${ws.id}/stop?force=true`, { method: 'POST' }));
    expect(r).toEqual({ status: 200, body: { id: ws.id, status: 'stopping' } });
    await waitStatus(p, ws.id, 'stopped');
    expect(inspect('container', ws.containerId).State.ExitCode).toBe(137);
  });

  test('delete keeps the volume of a persistent workspace unless volumes=true', async () => {
    const row = (await getWorkspace(p, ws.id)).body;
    const volume = inspect('container', row.containerId).Mounts.find((m: any) => m.Destination === '/workspace').Name;
    const r = await json(await api(`/api/workspaces/${ws.id}`, { method: 'DELETE' }));
    expect(r).toEqual({ status: 200, body: { id: ws.id, deleted: true } });
    expect(inspect('container', row.containerId)).toBeNull();
    expect(inspect('volume', volume)).not.toBeNull();
    expect((await getWorkspace(p, ws.id)).status).toBe(404);
    docker('volume', 'rm', volume);
  });
});

describe('moves during creation', () => {
  test('stop and start while creating answer 409, delete waits and removes what creation made', async () => {
    const r = await create({ name: 'early-delete' });
    expect(r.status).toBe(201);
    for (const op of ['stop', 'start', 'restart']) {
      const res = await json(await api(`/api/workspaces/${r.body.id}/${op}`, { method: 'POST' }));
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'INVALID_TRANSITION', details: { status: 'creating', operation: op } });
    }
    const del = await json(await api(`/api/workspaces/${r.body.id}?volumes=true`, { method: 'DELETE' }));
    expect(del).toEqual({ status: 200, body: { id: r.body.id, deleted: true } });
    expect(docker('ps', '-aq', '--filter', `label=dev.keel.workspace=${r.body.id}`).stdout).toBe('');
    expect(docker('volume', 'ls', '-q', '--filter', `label=dev.keel.workspace=${r.body.id}`).stdout).toBe('');
  });

  test('restart from stopped brings the workspace back to running', async () => {
    const w = await createRunning(p, 'restart-stopped', { body: { type: 'persistent' } });
    await api(`/api/workspaces/${w.id}/stop?force=true`, { method: 'POST' });
    await waitStatus(p, w.id, 'stopped');
    const r = await json(await api(`/api/workspaces/${w.id}/restart`, { method: 'POST' }));
    expect(r.body.status).toBe('restarting');
    await waitStatus(p, w.id, 'running');
    await api(`/api/workspaces/${w.id}?volumes=true`, { method: 'DELETE' });
  });
});

describe('volumes and temporary workspaces', () => {
  test('delete with volumes=true removes the volume too', async () => {
    const ws = await createRunning(p, 'vol-delete');
    const volume = inspect('container', ws.containerId).Mounts.find((m: any) => m.Destination === '/workspace').Name;
    expect(inspect('volume', volume).Labels['dev.keel.workspace']).toBe(ws.id);
    const r = await json(await api(`/api/workspaces/${ws.id}?volumes=true`, { method: 'DELETE' }));
    expect(r).toEqual({ status: 200, body: { id: ws.id, deleted: true } });
    expect(inspect('container', ws.containerId)).toBeNull();
    expect(inspect('volume', volume)).toBeNull();
  });

  test('a temporary workspace is removed with its volume when stopped', async () => {
    const ws = await createRunning(p, 'temp-one', { body: { type: 'temporary' } });
    expect(ws.type).toBe('temporary');
    const volume = inspect('container', ws.containerId).Mounts.find((m: any) => m.Destination === '/workspace').Name;
    const r = await json(await api(`/api/workspaces/${ws.id}/stop`, { method: 'POST' }));
    expect(r.body.status).toBe('stopping');
    await waitFor('the temporary workspace to be gone', async () => (await getWorkspace(p, ws.id)).status === 404);
    expect(inspect('container', ws.containerId)).toBeNull();
    expect(inspect('volume', volume)).toBeNull();
  });
});

describe('names and ports', () => {
  let ws: any;
  beforeAll(async () => {
    ws = await createRunning(p, 'ports-main');
  }, 60_000);

  test('a taken name answers 409 WORKSPACE_EXISTS, for any owner', async () => {
    for (const as of ['alice', 'bob']) {
      const r = await create({ name: 'ports-main' }, as);
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('WORKSPACE_EXISTS');
    }
  });

  test('a port another workspace holds answers 409 PORT_UNAVAILABLE', async () => {
    const r = await create({ name: 'ports-clash', port: ws.port });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('PORT_UNAVAILABLE');
    expect((await json(await api('/api/workspaces'))).body.workspaces.map((w: any) => w.name)).not.toContain('ports-clash');
  });

  test('a port a host process listens on answers 409 PORT_UNAVAILABLE', async () => {
    const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
    try {
      // The system's port is outside APP_WORKSPACE_PORT_RANGE: only an admin may ask for it.
      const r = await create({ name: 'ports-host', port: server.port }, 'admin');
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('PORT_UNAVAILABLE');
      expect(r.body.error.message).toContain('host');
    } finally {
      server.stop(true);
    }
  });

  test('a requested free port is used as the code-server port', async () => {
    // Near the end of the range, which allocation reaches last.
    const port = 23290;
    const r = await create({ name: 'ports-chosen', port, type: 'temporary' });
    expect(r.status).toBe(201);
    expect(r.body.port).toBe(port);
    const w = await waitStatus(p, r.body.id, 'running');
    expect(inspect('container', w.containerId).HostConfig.PortBindings['8080/tcp'][0].HostPort).toBe(String(port));
    await api(`/api/workspaces/${r.body.id}`, { method: 'DELETE' });
  });
});

describe('ownership and listing', () => {
  let mine: any;
  let bobs: any;
  beforeAll(async () => {
    [mine, bobs] = await Promise.all([createRunning(p, 'own-alice'), createRunning(p, 'own-bob', { body: { type: 'temporary' }, as: 'bob' })]);
  }, 60_000);

  test('another actor gets 404 WORKSPACE_NOT_FOUND on every route of a workspace', async () => {
    const calls: [string, string][] = [
      ['GET', ''],
      ['POST', '/start'],
      ['POST', '/stop'],
      ['POST', '/restart'],
      ['DELETE', ''],
    ];
    for (const [method, suffix] of calls) {
      const r = await json(await api(`/api/workspaces/${mine.id}${suffix}`, { method, as: 'bob' }));
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('WORKSPACE_NOT_FOUND');
    }
    expect((await getWorkspace(p, mine.id)).body.status).toBe('running');
  });

  test('an unknown id answers 404 WORKSPACE_NOT_FOUND', async () => {
    const r = await getWorkspace(p, 'ws_doesnotexist');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: { code: 'WORKSPACE_NOT_FOUND', message: 'workspace not found', details: {} } });
  });

  test('the list shows only the actor\'s workspaces, an admin sees all', async () => {
    const alice = (await json(await api('/api/workspaces'))).body.workspaces.map((w: any) => w.id);
    const bob = (await json(await api('/api/workspaces', { as: 'bob' }))).body.workspaces.map((w: any) => w.id);
    const admin = (await json(await api('/api/workspaces', { as: 'admin' }))).body.workspaces.map((w: any) => w.id);
    expect(alice).toContain(mine.id);
    expect(alice).not.toContain(bobs.id);
    expect(bob).toEqual([bobs.id]);
    expect(admin).toEqual(expect.arrayContaining([mine.id, bobs.id]));
  });

  test('list entries carry containerId and urls but no stats', async () => {
    const w = (await json(await api('/api/workspaces', { as: 'bob' }))).body.workspaces[0];
    expect(w.containerId).toBe(bobs.containerId);
    expect(w.urls.codeServer).toBe(bobs.urls.codeServer);
    expect(w.stats).toBeUndefined();
  });

  test('the list filters on status and type', async () => {
    const ids = async (q: string, as = 'admin') => (await json(await api(`/api/workspaces?${q}`, { as }))).body.workspaces.map((w: any) => w.id);
    expect(await ids('status=running')).toEqual(expect.arrayContaining([mine.id, bobs.id]));
    expect(await ids('status=stopped')).not.toContain(mine.id);
    expect(await ids('type=temporary')).toContain(bobs.id);
    expect(await ids('type=temporary')).not.toContain(mine.id);
    expect(await ids('type=persistent&status=running')).toContain(mine.id);
    const bad = await json(await api('/api/workspaces?status=sleeping'));
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_REQUEST');
  });

  test('an admin acts on another actor\'s workspace', async () => {
    const r = await json(await api(`/api/workspaces/${bobs.id}`, { method: 'DELETE', as: 'admin' }));
    expect(r).toEqual({ status: 200, body: { id: bobs.id, deleted: true } });
    expect((await getWorkspace(p, bobs.id, 'bob')).status).toBe(404);
  });
});

describe('reconciliation with the engine', () => {
  let ws: any;
  beforeAll(async () => {
    ws = await createRunning(p, 'reconcile-me');
  }, 60_000);

  test('a container killed behind Keel\'s back becomes stopped', async () => {
    expect(docker('kill', ws.containerId).code).toBe(0);
    const w = await waitStatus(p, ws.id, 'stopped', { timeoutMs: 15_000 });
    expect(w.containerId).toBe(ws.containerId);
  });

  test('a container removed behind Keel\'s back shows failed with the reason, and start recreates it', async () => {
    expect(docker('rm', '-f', ws.containerId).code).toBe(0);
    const w = await waitStatus(p, ws.id, 'failed', { timeoutMs: 15_000 });
    expect(w.containerId).toBeNull();
    expect(w.reason).toContain('removed outside Keel');
    const r = await json(await api(`/api/workspaces/${ws.id}/start`, { method: 'POST' }));
    expect(r.body.status).toBe('starting');
    const back = await waitStatus(p, ws.id, 'running');
    expect(back.containerId).not.toBe(ws.containerId);
    expect(back.reason).toBeUndefined();
  });
});
