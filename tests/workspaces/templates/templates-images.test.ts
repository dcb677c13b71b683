// Images of template versions are collected once no one gets them: an old version's image stays while a
// workspace made from it exists and goes once that workspace is deleted; a deleted template's image
// stays while its workspaces exist (they keep restarting) and goes with the last of them; the current
// version's image stays.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, waitFor } from '../../helpers/docker';
import { closeAndClean, templateBuilt, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
const post = (path: string, json: unknown) => p.api('workspaces', path, { method: 'POST', json, as: 'alice' });
const del = (path: string) => p.api('workspaces', path, { method: 'DELETE', as: 'alice' });
const hasImage = (ref: string) => docker('image', 'inspect', ref).code === 0;

async function running(name: string): Promise<string> {
  const res = await post('/api/workspaces', { name, template: 'collected' });
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as any;
  await waitStatus(p, id, 'running', { as: 'alice', timeoutMs: 90_000 });
  return id;
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_AUTO_STOP_MINUTES: '0' } });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
}, 60_000);

test('an old version is kept while a workspace names it, then removed; a deleted template is kept for its last workspace', async () => {
  const res = await post('/api/templates', { name: 'collected', dockerfile: 'FROM keel/minimal\nCOPY v.txt /opt/v.txt\n', files: { 'v.txt': `v ${Date.now()}\n` } });
  expect(res.status).toBe(202);
  const { id } = (await res.json()) as any;
  const [v1, v2] = [`keel-template:${id}-v1`, `keel-template:${id}-v2`];
  await templateBuilt(p, id);
  const first = await running('collected-1');

  expect((await post(`/api/templates/${id}/builds`, {})).status).toBe(202);
  await templateBuilt(p, id, { version: 2 });
  await Bun.sleep(500); // the collection the build's end started
  expect(hasImage(v1)).toBe(true); // collected-1 was made from it
  expect(hasImage(v2)).toBe(true);

  expect((await del(`/api/workspaces/${first}?volumes=true`)).status).toBe(200);
  await waitFor('version 1 image removed', () => !hasImage(v1), 30_000, 200);
  expect(hasImage(v2)).toBe(true); // the current version

  const second = await running('collected-2');
  expect((await del(`/api/templates/${id}`)).status).toBe(200);
  await Bun.sleep(500);
  expect(hasImage(v2)).toBe(true); // collected-2 still names it
  expect((await post(`/api/workspaces/${second}/restart`, {})).status).toBe(200);
  await waitStatus(p, second, 'running', { as: 'alice', timeoutMs: 60_000 });
  const r = (await (await post(`/api/workspaces/${second}/exec`, { command: 'cat /opt/v.txt' })).json()) as any;
  expect(r.stdout).toMatch(/^v \d+\n$/);

  expect((await del(`/api/workspaces/${second}?volumes=true`)).status).toBe(200);
  await waitFor('version 2 image removed', () => !hasImage(v2), 30_000, 200);
}, 300_000);
