// The workspace quotas on a temp SQLite file and the memory engine, through app.handle: what
// GET /api/quotas reports, and creates and starts past the running and workspaces quotas refused
// with 429 QUOTA_EXCEEDED, in about a second; the exec and stream slots the services take, as far as
// an engine that runs no process shows them (commands that run: tests/workspaces/quotas).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startServiceApp, type ServiceApp } from '../helpers/service-app';
import { waitFor } from '../helpers/wait';

let s: ServiceApp;
beforeAll(async () => {
  s = await startServiceApp('workspaces', { env: { APP_QUOTA_WORKSPACES: '3', APP_QUOTA_RUNNING: '2', APP_QUOTA_EXECS: '2', APP_QUOTA_STREAMS: '2' } });
});
afterAll(() => s.close());

const create = (as: string, name: string) => s.api('/api/workspaces', { method: 'POST', as, json: { name, template: 'minimal' } });
async function createRunning(as: string, name: string): Promise<string> {
  const res = await create(as, name);
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as any;
  await status(as, id, 'running');
  return id;
}
const status = (as: string, id: string, want: string) =>
  waitFor(`${id} ${want}`, async () => ((await (await s.api(`/api/workspaces/${id}`, { as })).json()) as any).status === want, 5_000, 10);
async function expectQuota(res: Response, quota: string, limit: number) {
  expect(res.status).toBe(429);
  expect(((await res.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota, limit } });
}
const names = async (as: string) => (((await (await s.api('/api/workspaces', { as })).json()) as any).workspaces as any[]).map((w) => w.name).sort();

test('GET /api/quotas tells an actor its limits and use, and admins that they are exempt', async () => {
  const mine = await s.api('/api/quotas', { as: 'nobody-yet' });
  expect(mine.status).toBe(200);
  expect(await mine.json()).toEqual({ exempt: false, limits: { workspaces: 3, running: 2, execs: 2, streams: 2, volumes: 20 }, used: { workspaces: 0, running: 0, execs: 0, streams: 0, volumes: 0 } });
  expect(((await (await s.api('/api/quotas', { as: 'admin' })).json()) as any).exempt).toBe(true);
});

describe('running workspaces', () => {
  test('a create past the running quota is 429 and creates nothing', async () => {
    await createRunning('rq', 'rq1');
    await createRunning('rq', 'rq2');
    await expectQuota(await create('rq', 'rq3'), 'running', 2);
    expect(await names('rq')).toEqual(['rq1', 'rq2']);
  });

  test('a start past the running quota is 429; stopping another frees the place', async () => {
    const a = await createRunning('st', 'st1');
    expect((await s.api(`/api/workspaces/${a}/stop`, { method: 'POST', as: 'st' })).status).toBe(200);
    await status('st', a, 'stopped');
    const b = await createRunning('st', 'st2');
    await createRunning('st', 'st3');
    await expectQuota(await s.api(`/api/workspaces/${a}/start`, { method: 'POST', as: 'st' }), 'running', 2);
    expect((await s.api(`/api/workspaces/${b}/stop`, { method: 'POST', as: 'st' })).status).toBe(200);
    await status('st', b, 'stopped');
    expect((await s.api(`/api/workspaces/${a}/start`, { method: 'POST', as: 'st' })).status).toBe(200);
    await status('st', a, 'running');
  });

  test('concurrent creates cannot overshoot: exactly the quota is created', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => create('cc', `cc${i}`)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    for (const r of results.filter((x) => x.status !== 201)) await expectQuota(r, 'running', 2);
    expect(await names('cc')).toHaveLength(2);
  });

  test('admin tokens are exempt', async () => {
    for (let i = 0; i < 4; i++) expect((await create('admin', `adm${i}`)).status).toBe(201);
  });
});

test('a create past the workspaces quota is 429 even with a running place free; a delete frees it', async () => {
  const a = await createRunning('wq', 'wq1');
  const b = await createRunning('wq', 'wq2');
  for (const id of [a, b]) {
    expect((await s.api(`/api/workspaces/${id}/stop`, { method: 'POST', as: 'wq' })).status).toBe(200);
    await status('wq', id, 'stopped');
  }
  await createRunning('wq', 'wq3');
  await expectQuota(await create('wq', 'wq4'), 'workspaces', 3);
  expect((await s.api(`/api/workspaces/${a}`, { method: 'DELETE', as: 'wq' })).status).toBe(200);
  expect((await create('wq', 'wq4')).status).toBe(201);
});

describe('exec and stream slots, taken by the services whatever the route', () => {
  const used = async (as: string) => ((await (await s.api('/api/quotas', { as })).json()) as any).used;

  test('open event streams fill the stream quota for every kind of stream; closing one gives its slot back', async () => {
    const id = await createRunning('sl', 'sl1');
    const streams = await Promise.all([s.api('/api/events', { as: 'sl' }), s.api('/api/events', { as: 'sl' })]);
    const readers = streams.map((r) => r.body!.getReader());
    for (const [i, r] of streams.entries()) {
      expect(r.status).toBe(200);
      await readers[i]!.read();
    }
    expect((await used('sl')).streams).toBe(2);
    await expectQuota(await s.api('/api/events', { as: 'sl' }), 'streams', 2);
    await expectQuota(await s.api(`/api/workspaces/${id}/logs?follow=true`, { as: 'sl' }), 'streams', 2);
    await expectQuota(await s.api(`/api/workspaces/${id}/exec`, { method: 'POST', as: 'sl', json: { command: 'true', stream: true } }), 'streams', 2);
    // A refused streaming exec gave its exec slot back too.
    expect((await used('sl')).execs).toBe(0);
    await readers[0]!.cancel();
    await waitFor('a stream slot back', async () => (await used('sl')).streams === 1, 2_000, 10);
    const follow = await s.api(`/api/workspaces/${id}/logs?follow=true`, { as: 'sl' });
    expect(follow.status).toBe(200);
    await follow.body!.cancel();
    await readers[1]!.cancel();
    await waitFor('every stream slot back', async () => (await used('sl')).streams === 0, 2_000, 10);
  });

  test('a command the engine refuses gives its exec slot back: more refusals than the quota are never 429', async () => {
    const id = await createRunning('ex', 'ex1');
    for (let i = 0; i < 3; i++) {
      const res = await s.api(`/api/workspaces/${id}/exec`, { method: 'POST', as: 'ex', json: { command: 'true' } });
      expect(res.status).toBe(502);
      expect(((await res.json()) as any).error.code).toBe('ENGINE_ERROR');
    }
    expect(await used('ex')).toMatchObject({ execs: 0, streams: 0 });
  });
});
