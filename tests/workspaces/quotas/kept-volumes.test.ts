// Kept volumes through HTTP and the engine: a persistent workspace deleted without volumes=true keeps
// its volume, and those volumes count against their owner (APP_QUOTA_VOLUMES): a delete that would keep
// one more answers 429 and deletes nothing. The owner lists them and removes them; another actor sees
// none of them and gets 404; an admin lists anyone's.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { inspect } from '../../helpers/docker';
import { closeAndClean, createRunning, getWorkspace } from '../../helpers/workspaces';

let p: TestPlatform;
const ws: Record<string, { id: string; volume: string }> = {};
beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_QUOTA_VOLUMES: '2' } });
  const made = await Promise.all(['kv-one', 'kv-two', 'kv-three', 'kv-four'].map((n) => createRunning(p, n, { as: 'vera', timeoutMs: 90_000 })));
  for (const w of made) ws[w.name] = { id: w.id, volume: `keel-ws-${w.id.replace('_', '-')}` };
}, 120_000);
afterAll(() => closeAndClean(p));

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p.api('workspaces', path, init);
async function json(res: Response) {
  return { status: res.status, body: (await res.json()) as any };
}
const del = (as: string, path: string) => api(path, { method: 'DELETE', as }).then(json);
const listed = async (as: string, query = '') => ((await json(await api(`/api/volumes${query}`, { as }))).body.volumes as any[]).map((v) => v.workspaceId).sort();

describe('kept volumes', () => {
  test('deletes that keep volumes count them, and the one past APP_QUOTA_VOLUMES is refused with 429 and deletes nothing', async () => {
    expect((await del('vera', `/api/workspaces/${ws['kv-one']!.id}`)).status).toBe(200);
    expect((await del('vera', `/api/workspaces/${ws['kv-two']!.id}`)).status).toBe(200);
    const quotas = (await json(await api('/api/quotas', { as: 'vera' }))).body;
    expect(quotas.limits.volumes).toBe(2);
    expect(quotas.used.volumes).toBe(2);

    const refused = await del('vera', `/api/workspaces/${ws['kv-three']!.id}`);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(refused.body.error.details).toEqual({ quota: 'volumes', limit: 2 });
    const still = await getWorkspace(p, ws['kv-three']!.id, 'vera');
    expect(still.status).toBe(200);
    expect(still.body.status).toBe('running');
    expect(inspect('volume', ws['kv-one']!.volume)).not.toBeNull();
  });

  test('the owner lists them with their names; another actor sees none and cannot remove them (404)', async () => {
    const mine = (await json(await api('/api/volumes', { as: 'vera' }))).body.volumes as any[];
    expect(mine.map((v) => v.workspaceId).sort()).toEqual([ws['kv-one']!.id, ws['kv-two']!.id].sort());
    const one = mine.find((v) => v.workspaceId === ws['kv-one']!.id);
    expect(one).toMatchObject({ name: ws['kv-one']!.volume, owner: 'vera' });
    expect(Number.isNaN(Date.parse(one.deletedAt))).toBe(false);

    expect(await listed('mallory')).toEqual([]);
    expect(await listed('mallory', '?actor=vera')).toEqual([]);
    for (const ref of [ws['kv-one']!.volume, ws['kv-one']!.id]) {
      const r = await del('mallory', `/api/volumes/${ref}`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('VOLUME_NOT_FOUND');
    }
    expect(inspect('volume', ws['kv-one']!.volume)).not.toBeNull();
  });

  test('an admin lists everyone\'s kept volumes, or one actor\'s with ?actor=', async () => {
    expect(await listed('admin', '?actor=vera')).toEqual([ws['kv-one']!.id, ws['kv-two']!.id].sort());
    expect(await listed('admin', '?actor=mallory')).toEqual([]);
    expect(await listed('admin')).toEqual(expect.arrayContaining([ws['kv-one']!.id, ws['kv-two']!.id]));
  });

  test('past the quota, volumes=true still deletes, and keeps nothing', async () => {
    expect((await del('vera', `/api/workspaces/${ws['kv-three']!.id}?volumes=true`)).status).toBe(200);
    expect(inspect('volume', ws['kv-three']!.volume)).toBeNull();
    expect((await listed('vera')).length).toBe(2);
  });

  test('the owner removes a kept volume, by name or by workspace id: gone from the engine, and its place is free again', async () => {
    const byName = await del('vera', `/api/volumes/${ws['kv-one']!.volume}`);
    expect(byName.status).toBe(200);
    expect(byName.body).toEqual({ name: ws['kv-one']!.volume, workspaceId: ws['kv-one']!.id, deleted: true });
    expect(inspect('volume', ws['kv-one']!.volume)).toBeNull();
    expect((await del('vera', `/api/volumes/${ws['kv-one']!.volume}`)).status).toBe(404);

    expect((await del('vera', `/api/workspaces/${ws['kv-four']!.id}`)).status).toBe(200);
    expect(await listed('vera')).toEqual([ws['kv-two']!.id, ws['kv-four']!.id].sort());
    expect(inspect('volume', ws['kv-four']!.volume)).not.toBeNull();

    const byId = await del('vera', `/api/volumes/${ws['kv-two']!.id}`);
    expect(byId.status).toBe(200);
    expect(inspect('volume', ws['kv-two']!.volume)).toBeNull();
    expect((await json(await api('/api/quotas', { as: 'vera' }))).body.used.volumes).toBe(1);
  });

  test('OpenAPI documents the kept-volume routes', async () => {
    const doc = await (await fetch(p.url('workspaces') + '/openapi.json')).json();
    expect(Object.keys(doc.paths['/api/volumes'])).toEqual(['get']);
    expect(doc.paths['/api/volumes/{ref}'].delete.responses['404']).toBeDefined();
  });
});
