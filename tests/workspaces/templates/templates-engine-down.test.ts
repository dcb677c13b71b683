// With several engines (APP_ENGINES) and the first one not answering, a template builds on the first
// engine that does, and a workspace made from it runs there.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, waitFor } from '../../helpers/docker';
import { closeAndClean, getWorkspace, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');
let p: TestPlatform;
const post = (path: string, json: unknown) => p.api('workspaces', path, { method: 'POST', json, as: 'alice' });

beforeAll(async () => {
  // `gone`: a socket nothing listens on, named first; `a`: the test engine.
  p = await startTestPlatform({
    services: ['workspaces'],
    env: { APP_ENGINES: `gone=unix:///tmp/keel-no-such-engine-${process.pid}.sock,a=${process.env.DOCKER_HOST}`, APP_ENGINE_CHECK_SECONDS: '1', APP_AUTO_STOP_MINUTES: '0' },
  });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
}, 60_000);

test('the build runs on the first engine that answers, and the workspace there', async () => {
  const res = await post('/api/templates', { name: 'first-up', dockerfile: `FROM keel/minimal\nRUN echo ${Date.now()} > /tmp/stamp\n` });
  expect(res.status).toBe(202);
  const { id } = (await res.json()) as any;
  const t = await waitFor('the build', async () => {
    const v = (await (await p.api('workspaces', `/api/templates/${id}`, { as: 'alice' })).json()) as any;
    return v.status === 'building' ? null : v;
  }, 120_000);
  expect(t).toMatchObject({ status: 'ready', version: 1, reason: null });
  expect(docker('image', 'inspect', `keel-template:${id}-v1`).code).toBe(0);
  const ws = (await (await post('/api/workspaces', { name: 'on-first-up', template: 'first-up' })).json()) as { id: string };
  await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  expect((await getWorkspace(p, ws.id, 'admin')).body.engine).toBe('a');
  expect(((await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'cat /tmp/stamp' })).json()) as any).stdout).toMatch(/^\d+\n$/);
  docker('rmi', '-f', `keel-template:${id}-v1`);
}, 240_000);
