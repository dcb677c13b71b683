// The warm pool (APP_WARM_POOL=minimal=2) through HTTP and docker inspect: entries are made ahead,
// running on their own networks with their own volumes, and no actor sees them; a create it can serve
// claims one and answers `running` at once, under the workspace's own id (its code-server secret
// matches the container's env); two claims share nothing; the pool refills; creates that ask a port
// or a repo are made cold; a graceful close removes the entries still waiting.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ownPortRange, requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { bareRepo, gitDaemon } from '../../helpers/git';
import { closeAndClean, getWorkspace, waitStatus } from '../../helpers/workspaces';
import { sseReader } from '../../helpers/sse';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let instance = '';
let daemon: { port: number; stop(): void } | undefined;
const POOL = 2;
const RANGE = ownPortRange();
const [LO, HI] = RANGE.split('-').map(Number) as [number, number];

/** Pool-labelled containers of this Keel: id and the workspace id they were made for. */
function pooled(): { id: string; workspace: string }[] {
  const out = docker('ps', '-a', '--filter', `label=dev.keel.instance=${instance}`, '--filter', 'label=dev.keel.pool=minimal', '--format', '{{.ID}} {{.Label "dev.keel.workspace"}}').stdout;
  return out.split('\n').filter(Boolean).map((l) => {
    const [id, workspace] = l.split(' ');
    return { id: id!, workspace: workspace! };
  });
}

async function allWorkspaceIds(): Promise<Set<string>> {
  const res = await p.api('workspaces', '/api/workspaces', { as: 'admin' });
  return new Set(((await res.json()) as { workspaces: { id: string }[] }).workspaces.map((w) => w.id));
}

/** Entries waiting in the pool: pool containers running that no workspace owns. */
async function waiting(): Promise<{ id: string; workspace: string }[]> {
  const owned = await allWorkspaceIds();
  return pooled().filter((c) => !owned.has(c.workspace) && inspect('container', c.id)?.State.Running);
}

const poolFull = () => waitFor('the warm pool to be full', async () => (await waiting()).length === POOL, 120_000, 250);

async function create(name: string, body: Record<string, unknown> = {}, as = 'alice') {
  const t0 = performance.now();
  const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name, template: 'minimal', ...body }, as });
  const ms = performance.now() - t0;
  return { status: res.status, body: (await res.json()) as any, ms };
}

const exec = async (id: string, command: string) => {
  const res = await p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command } });
  expect(res.status).toBe(200);
  return (await res.json()) as { exitCode: number; stdout: string };
};

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WARM_POOL: `minimal=${POOL}`, APP_AUTO_STOP_MINUTES: '0', APP_WORKSPACE_PORT_RANGE: RANGE } });
  instance = keelInstance(p.dataDir);
  daemon = await gitDaemon(bareRepo('proj', { 'README.md': 'hello\n' }));
  await poolFull();
}, 180_000);

let closed = false;

afterAll(async () => {
  daemon?.stop();
  if (closed) await removeInstanceObjects(instance);
  else await closeAndClean(p);
});

describe('warm pool', () => {
  test('entries run ahead of time on their own network and volume, with ports from the range, and no actor sees them', async () => {
    const entries = await waiting();
    expect(entries.length).toBe(POOL);
    const volumes = new Set<string>();
    for (const e of entries) {
      const c = inspect('container', e.id);
      expect(c.State.Running).toBe(true);
      expect(Object.keys(c.NetworkSettings.Networks)).toEqual([`keel-${e.workspace}`]);
      const mount = c.Mounts.find((m: any) => m.Destination === '/workspace');
      expect(mount.Type).toBe('volume');
      volumes.add(mount.Name);
      const bound = Object.values(c.HostConfig.PortBindings).flat().map((b: any) => Number(b.HostPort));
      expect(bound.length).toBe(3);
      for (const port of bound) expect(port >= LO && port <= HI).toBe(true);
      // Nobody reaches an entry by its id, admins included.
      for (const as of ['alice', 'admin']) expect((await getWorkspace(p, e.workspace, as)).status).toBe(404);
    }
    expect(volumes.size).toBe(POOL);
    for (const as of ['alice', 'bob', 'admin']) {
      const res = await p.api('workspaces', '/api/workspaces', { as });
      expect(((await res.json()) as { workspaces: unknown[] }).workspaces).toEqual([]);
    }
    const quotas = (await (await p.api('workspaces', '/api/quotas')).json()) as { used: { workspaces: number; running: number } };
    expect(quotas.used.workspaces).toBe(0);
    expect(quotas.used.running).toBe(0);
  });

  test('a create the pool can serve claims an entry and is running at once, under the id its code-server secret was made for, with the events of any create', async () => {
    await poolFull();
    const before = new Set((await waiting()).map((e) => e.id));
    const stream = sseReader(await p.api('workspaces', '/api/events'));
    const r = await create('warm-one');
    expect(r.status).toBe(201);
    console.log(`warm create answered in ${r.ms.toFixed(0)} ms (status ${r.body.status})`);
    // Running in the answer itself; allow a generous settle on a loaded machine all the same.
    const w = r.body.status === 'running' ? (await getWorkspace(p, r.body.id)).body : await waitStatus(p, r.body.id, 'running', { timeoutMs: 10_000 });
    expect(w.status).toBe('running');
    expect(w.name).toBe('warm-one');
    expect([...before].some((id) => w.containerId.startsWith(id))).toBe(true);
    const c = inspect('container', w.containerId);
    expect(c.State.Running).toBe(true);
    expect(c.Config.Labels['dev.keel.workspace']).toBe(w.id);
    const secret = c.Config.Env.find((e: string) => e.startsWith('KEEL_CODE_SECRET='))!.split('=')[1];
    expect(w.urls.codeServer).toContain(`keel:${secret}@`);
    expect(Number(Object.values(c.HostConfig.PortBindings).flat().map((b: any) => b.HostPort).find((port: string) => Number(port) === w.port))).toBe(w.port);
    // The owner sees it, lists it and it counts; another actor does not reach it.
    expect((await getWorkspace(p, w.id, 'bob')).status).toBe(404);
    const listed = (await (await p.api('workspaces', '/api/workspaces')).json()) as { workspaces: { id: string }[] };
    expect(listed.workspaces.map((x) => x.id)).toEqual([w.id]);
    expect((await exec(w.id, 'echo ok')).stdout.trim()).toBe('ok');
    // The events of any create, for this workspace, and none of any entry.
    const frames = await stream.collect((f) => f.event === 'workspace' && JSON.parse(f.data!).event === 'workspace.started', 30_000);
    await stream.cancel();
    const events = frames.filter((f) => f.event === 'workspace').map((f) => JSON.parse(f.data!));
    expect(events.map((e) => [e.event, e.workspace.id, e.workspace.name])).toEqual([
      ['workspace.created', w.id, 'warm-one'],
      ['workspace.started', w.id, 'warm-one'],
    ]);
  });

  test('the pool refills in the background after a claim', async () => {
    await poolFull();
    const r = await create('warm-refill');
    expect(r.status).toBe(201);
    await poolFull();
    expect((await waiting()).map((e) => e.workspace)).not.toContain(r.body.id);
  });

  test('two claims share nothing: different volumes, and a file written in one is absent in the other', async () => {
    await poolFull();
    const a = await create('warm-a');
    const b = await create('warm-b');
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    const wa = await waitStatus(p, a.body.id, 'running', { timeoutMs: 60_000 });
    const wb = await waitStatus(p, b.body.id, 'running', { timeoutMs: 60_000 });
    const vol = (w: any) => inspect('container', w.containerId).Mounts.find((m: any) => m.Destination === '/workspace').Name;
    expect(vol(wa)).not.toBe(vol(wb));
    expect(wa.port).not.toBe(wb.port);
    expect((await exec(wa.id, 'echo secret-a > /workspace/a.txt && echo tmp > /tmp/a.txt')).exitCode).toBe(0);
    expect((await exec(wb.id, 'ls /workspace/a.txt /tmp/a.txt 2>&1; true')).stdout).toContain('No such file');
    expect((await exec(wb.id, 'cat /workspace/a.txt /tmp/a.txt 2>/dev/null; echo end')).stdout.trim()).toBe('end');
  });

  test('a refused create (name taken) answers 409 and leaves the pool with the same, unused entries', async () => {
    await poolFull();
    const entries = new Set((await waiting()).map((e) => e.id));
    const again = await create('warm-one');
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('WORKSPACE_EXISTS');
    expect(new Set((await waiting()).map((e) => e.id))).toEqual(entries);
    // The entry handed back serves the next create.
    const next = await create('warm-after-409');
    expect(next.status).toBe(201);
    expect(next.body.status).toBe('running');
    const claimed = (await getWorkspace(p, next.body.id)).body;
    expect([...entries].some((id) => claimed.containerId.startsWith(id))).toBe(true);
  });

  test('creates that ask a port or a repo are made cold, and leave the pool as it was', async () => {
    await poolFull();
    const entries = new Set((await waiting()).map((e) => e.id));
    // The top of the range: ports are handed out from the bottom, so no workspace or entry holds it.
    const portAsked = await create('cold-port', { port: HI });
    expect(portAsked.status).toBe(201);
    expect(portAsked.body.status).toBe('creating');
    const repo = await create('cold-repo', { repo: { url: `git://127.0.0.1:${daemon!.port}/proj.git` } });
    expect(repo.status).toBe(201);
    expect(repo.body.status).toBe('creating');
    const wp = await waitStatus(p, portAsked.body.id, 'running', { timeoutMs: 90_000 });
    const wr = await waitStatus(p, repo.body.id, 'running', { timeoutMs: 90_000 });
    for (const w of [wp, wr]) {
      expect(inspect('container', w.containerId).Config.Labels['dev.keel.pool']).toBeUndefined();
      expect([...entries].some((id) => w.containerId.startsWith(id))).toBe(false);
    }
    expect((await exec(wr.id, 'cat /workspace/README.md')).stdout).toBe('hello\n');
    expect(new Set((await waiting()).map((e) => e.id))).toEqual(entries);
  });

  test('a graceful close removes the waiting entries (containers, volumes, networks) and leaves the claimed workspaces', async () => {
    await poolFull();
    const owned = await allWorkspaceIds();
    const entries = await waiting();
    await p.close();
    closed = true;
    for (const e of entries) {
      expect(inspect('container', e.id)).toBeNull();
      expect(inspect('volume', `keel-ws-${e.workspace.replace('_', '-')}`)).toBeNull();
      expect(docker('network', 'inspect', `keel-${e.workspace}`).code).not.toBe(0);
    }
    const left = pooled().map((c) => c.workspace);
    expect(left.every((id) => owned.has(id))).toBe(true);
    expect(left.length).toBeGreaterThan(0);
  });
});
