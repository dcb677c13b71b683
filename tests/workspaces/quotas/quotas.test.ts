// Per-actor quotas through HTTP and the engine: each quota's 429 QUOTA_EXCEEDED with {quota, limit},
// nothing created or started past it, the place freed again when a workspace stops or is deleted, an
// exec ends or a stream closes; admin tokens exempt; concurrent creates that cannot overshoot; and the
// port range non-admins must stay in.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, keelInstance, waitFor } from '../../helpers/docker';
import { sseReader } from '../../helpers/sse';
import { closeAndClean, createRunning, waitStatus } from '../../helpers/workspaces';

let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform({
    services: ['workspaces'],
    env: { APP_WORKSPACE_PORT_RANGE: '25400-25449', APP_QUOTA_WORKSPACES: '3', APP_QUOTA_RUNNING: '2', APP_QUOTA_EXECS: '2', APP_QUOTA_STREAMS: '2' },
  });
}, 60_000);
afterAll(() => closeAndClean(p));

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p.api('workspaces', path, init);
async function json(res: Response) {
  return { status: res.status, body: (await res.json()) as any };
}
const create = (as: string, body: Record<string, unknown>) => api('/api/workspaces', { method: 'POST', json: { template: 'minimal', ...body }, as }).then(json);
const names = async (as: string) => ((await json(await api('/api/workspaces', { as }))).body.workspaces as any[]).map((w) => w.name).sort();
// This Keel's only: `npm test` runs this file on SQLite and on PostgreSQL, against one engine.
const containersOf = (owner: string) => docker('ps', '-aq', '--filter', `label=dev.keel.instance=${keelInstance(p.dataDir)}`, '--filter', `label=dev.keel.owner=${owner}`).stdout.split('\n').filter(Boolean).length;
const usage = async (as: string) => (await json(await api('/api/quotas', { as }))).body.used;
async function stop(as: string, id: string) {
  expect((await api(`/api/workspaces/${id}/stop`, { method: 'POST', as })).status).toBe(200);
  await waitStatus(p, id, 'stopped', { as });
}

function expectQuota(r: { status: number; body: any }, quota: string, limit: number) {
  expect(r.status).toBe(429);
  expect(r.body.error.code).toBe('QUOTA_EXCEEDED');
  expect(r.body.error.details).toEqual({ quota, limit });
}

describe('GET /api/quotas', () => {
  test('tells an actor its limits and what it uses, and admins that they are exempt', async () => {
    const mine = await json(await api('/api/quotas', { as: 'nobody-yet' }));
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ exempt: false, limits: { workspaces: 3, running: 2, execs: 2, streams: 2, volumes: 20 }, used: { workspaces: 0, running: 0, execs: 0, streams: 0, volumes: 0 } });
    expect((await json(await api('/api/quotas', { as: 'admin' }))).body.exempt).toBe(true);
  });
});

describe('running workspaces', () => {
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    for (const n of ['rq1', 'rq2']) ids[n] = (await createRunning(p, n, { as: 'rq' })).id;
  }, 90_000);

  test('a create past the running quota is 429 and creates nothing', async () => {
    expectQuota(await create('rq', { name: 'rq3' }), 'running', 2);
    expect(await names('rq')).toEqual(['rq1', 'rq2']);
    expect(containersOf('rq')).toBe(2);
  });

  test('a start past the running quota is 429 and the workspace stays stopped', async () => {
    await stop('rq', ids.rq1!);
    ids.rq3 = (await createRunning(p, 'rq3', { as: 'rq' })).id;
    for (const op of ['start', 'restart']) {
      expectQuota(await json(await api(`/api/workspaces/${ids.rq1}/${op}`, { method: 'POST', as: 'rq' })), 'running', 2);
      expect((await json(await api(`/api/workspaces/${ids.rq1}`, { as: 'rq' }))).body.status).toBe('stopped');
    }
    expect(docker('inspect', '-f', '{{.State.Running}}', ...(await runningContainers('rq'))).stdout.split('\n')).toEqual(['true', 'true']);
  });

  test('a restart of a workspace that already runs needs no new place', async () => {
    const r = await json(await api(`/api/workspaces/${ids.rq2}/restart`, { method: 'POST', as: 'rq' }));
    expect(r.status).toBe(200);
    await waitStatus(p, ids.rq2!, 'running', { as: 'rq' });
  });

  test('stopping a workspace frees its place: the stopped one starts', async () => {
    await stop('rq', ids.rq3!);
    expect((await api(`/api/workspaces/${ids.rq1}/start`, { method: 'POST', as: 'rq' })).status).toBe(200);
    await waitStatus(p, ids.rq1!, 'running', { as: 'rq' });
    expect(await usage('rq')).toMatchObject({ workspaces: 3, running: 2 });
  });
});

async function runningContainers(owner: string): Promise<string[]> {
  const list = (await json(await api('/api/workspaces?status=running', { as: owner }))).body.workspaces as any[];
  return list.map((w) => w.containerId);
}

describe('workspaces held', () => {
  test('a create past the workspaces quota is 429; a delete frees the place', async () => {
    const a = await createRunning(p, 'wq1', { as: 'wq' });
    await stop('wq', a.id);
    await createRunning(p, 'wq2', { as: 'wq' });
    const res = await create('wq', { name: 'wq3', type: 'temporary' });
    expect(res.status).toBe(201);
    await waitStatus(p, res.body.id, 'running', { as: 'wq' });
    // Three held (one stopped): a fourth is refused for the workspaces quota.
    expectQuota(await create('wq', { name: 'wq4' }), 'workspaces', 3);
    expect(await names('wq')).toEqual(['wq1', 'wq2', 'wq3']);
    // A temporary workspace that stops is deleted: the workspaces quota has room again, the running one too.
    await api(`/api/workspaces/${res.body.id}/stop`, { method: 'POST', as: 'wq' });
    await waitFor('the temporary workspace to be gone', async () => !(await names('wq')).includes('wq3'), 30_000);
    const again = await create('wq', { name: 'wq4' });
    expect(again.status).toBe(201);
    await waitStatus(p, again.body.id, 'running', { as: 'wq' });
    // A delete frees a workspaces place too (wq1 is stopped; wq2 and wq4 run, so the create must wait for a running place).
    expectQuota(await create('wq', { name: 'wq5' }), 'workspaces', 3);
    expect((await api(`/api/workspaces/${a.id}?volumes=true`, { method: 'DELETE', as: 'wq' })).status).toBe(200);
    expectQuota(await create('wq', { name: 'wq5' }), 'running', 2);
  }, 120_000);

  test('concurrent creates cannot overshoot: exactly the quota is created', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => create('cc', { name: `cc${i}`, type: 'temporary' })));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBe(2);
    for (const r of results.filter((x) => x.status !== 201)) expectQuota(r, 'running', 2);
    expect((await names('cc')).length).toBe(2);
    for (const r of created) await api(`/api/workspaces/${r.body.id}`, { method: 'DELETE', as: 'cc' });
  }, 60_000);

  test('admin tokens are exempt', async () => {
    const results = await Promise.all(['ad1', 'ad2', 'ad3', 'ad4'].map((name) => create('admin', { name, type: 'temporary' })));
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    for (const r of results) await api(`/api/workspaces/${r.body.id}`, { method: 'DELETE', as: 'admin' });
  }, 60_000);
});

describe('execs and streams', () => {
  let ws: any;
  beforeAll(async () => {
    ws = await createRunning(p, 'lx', { as: 'lx' });
  }, 60_000);

  /** A JSON exec that waits until /tmp/<gate> exists; its response promise. */
  const gated = (gate: string, signal?: AbortSignal) =>
    api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', as: 'lx', json: { command: `while [ ! -e /tmp/${gate} ]; do sleep 0.1; done; echo done`, timeout: 60_000 }, signal });
  const follow = (as = 'lx', signal?: AbortSignal) => api(`/api/workspaces/${ws.id}/logs?follow=true&tail=1`, { as, signal });

  test('a third concurrent exec is 429 and does not run; the place comes back when an exec ends', async () => {
    const leave = new AbortController();
    const first = gated('go-1', leave.signal).catch(() => null);
    const second = gated('go-2');
    await waitFor('two execs in flight', async () => (await usage('lx')).execs === 2);
    expectQuota(await json(await api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', as: 'lx', json: { command: 'touch /tmp/third-ran' } })), 'execs', 2);
    expectQuota(await json(await api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', as: 'lx', json: { command: 'touch /tmp/third-ran', stream: true } })), 'execs', 2);
    expect(docker('exec', ws.containerId, 'sh', '-c', 'test -e /tmp/third-ran && echo ran || echo absent').stdout).toBe('absent');
    // One ends normally, one by its client leaving: both places come back.
    docker('exec', ws.containerId, 'touch', '/tmp/go-2');
    expect((await json(await second)).body.stdout).toBe('done\n');
    leave.abort();
    await first;
    await waitFor('the exec places to come back', async () => (await usage('lx')).execs === 0);
    const r = await json(await api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', as: 'lx', json: { command: 'echo again' } }));
    expect(r.body.stdout).toBe('again\n');
  });

  test('a third open stream is 429; closing one gives its place back', async () => {
    const a = new AbortController();
    const one = await follow('lx', a.signal);
    const two = await follow('lx');
    expect([one.status, two.status]).toEqual([200, 200]);
    const reader = sseReader(two);
    await reader.next();
    expect((await usage('lx')).streams).toBe(2);
    expectQuota(await json(await follow()), 'streams', 2);
    expectQuota(await json(await api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', as: 'lx', json: { command: 'touch /tmp/stream-ran', stream: true } })), 'streams', 2);
    expect(docker('exec', ws.containerId, 'sh', '-c', 'test -e /tmp/stream-ran && echo ran || echo absent').stdout).toBe('absent');
    expect((await usage('lx')).execs).toBe(0);
    a.abort();
    await waitFor('the closed stream to give its place back', async () => (await usage('lx')).streams === 1);
    const streamed = await api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', as: 'lx', json: { command: 'echo streamed', stream: true } });
    expect(streamed.status).toBe(200);
    const frames = await sseReader(streamed).collect((f) => f.event === 'exit');
    expect(frames.some((f) => f.event === 'stdout' && JSON.parse(f.data!).data === 'streamed\n')).toBe(true);
    await waitFor('the streaming exec to give its places back', async () => {
      const u = await usage('lx');
      return u.streams === 1 && u.execs === 0;
    });
    await reader.cancel();
    await waitFor('every stream place back', async () => (await usage('lx')).streams === 0);
  });

  test('admin tokens open streams past the quota', async () => {
    const open = await Promise.all([follow('admin'), follow('admin'), follow('admin')]);
    expect(open.map((r) => r.status)).toEqual([200, 200, 200]);
    for (const r of open) await r.body!.cancel();
  });

  test('a follow that the workspace\'s stop ends gives its place back', async () => {
    const one = await follow();
    const reader = sseReader(one);
    await reader.next();
    expect((await usage('lx')).streams).toBe(1);
    await api(`/api/workspaces/${ws.id}/stop`, { method: 'POST', as: 'lx' });
    const frames = await reader.collect((f) => f.event === 'end', 30_000);
    expect(frames.at(-1)?.event).toBe('end');
    await waitFor('the ended stream to give its place back', async () => (await usage('lx')).streams === 0);
  });
});

describe('ports', () => {
  test('a port outside APP_WORKSPACE_PORT_RANGE is 400 for a non-admin, and nothing is created', async () => {
    const r = await create('pr', { name: 'pr-out', port: 25450 });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('INVALID_REQUEST');
    expect(r.body.error.details).toEqual({ property: '/port', range: '25400-25449' });
    expect(await names('pr')).toEqual([]);
  });

  test('an admin may ask for a port outside the range', async () => {
    const r = await create('admin', { name: 'pr-admin', port: 25460, type: 'temporary' });
    expect(r.status).toBe(201);
    expect(r.body.port).toBe(25460);
    await api(`/api/workspaces/${r.body.id}`, { method: 'DELETE', as: 'admin' });
  });
});
