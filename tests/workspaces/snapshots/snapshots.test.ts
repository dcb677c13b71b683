// Snapshots and forks through HTTP against a real engine: a snapshot carries the files of the volume
// (/workspace) and of the container's own file system (/tmp); workspaces made from it, or forked, have
// both and are apart from each other; snapshots are owned (404) and counted (429); a delete answers 200
// even while workspaces made from it exist (its slot free at once, its image kept for them until the
// last is deleted); snapshots survive a restart of Keel, and what a snapshot cut short leaves (an image
// and an archive without a row) is removed at start-up.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, keelInstance, removeInstanceObjects } from '../../helpers/docker';
import { closeAndClean, createRunning, errorCode, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

const dataDir = mkdtempSync(join(tmpdir(), 'keel-snapshots-'));
const env = { APP_QUOTA_SNAPSHOTS: '3', APP_AUTO_STOP_MINUTES: '0' };
let p: TestPlatform;
let origin: any;
let instance = '';

const api = (path: string, init: RequestInit & { as?: string; json?: unknown } = {}) => p.api('workspaces', path, init);
const post = (path: string, json: unknown, as = 'alice') => api(path, { method: 'POST', json, as });
async function sh(id: string, command: string): Promise<string> {
  const res = await post(`/api/workspaces/${id}/exec`, { command });
  expect(res.status).toBe(200);
  return ((await res.json()) as { stdout: string }).stdout.trim();
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env, dataDir });
  instance = keelInstance(dataDir);
  origin = await createRunning(p, 'origin', { timeoutMs: 90_000 });
  await sh(origin.id, 'echo in-volume > /workspace/vol.txt && echo outside > /tmp/outside.txt');
}, 120_000);

afterAll(async () => {
  await closeAndClean(p);
  // Snapshot images are not containers, volumes or networks: removed here if a test left one.
  for (const ref of docker('images', '-q', '--filter', `label=dev.keel.instance=${instance}`).stdout.split('\n').filter(Boolean)) docker('rmi', '-f', ref);
  await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
});

let snap: any;
let forks: any[] = [];

describe('snapshots', () => {
  test('a snapshot of a running workspace answers 201 with its shape, and its image is on the engine', async () => {
    const res = await post(`/api/workspaces/${origin.id}/snapshots`, { name: 'first' });
    expect(res.status).toBe(201);
    snap = await res.json();
    expect(Object.keys(snap).sort()).toEqual(['createdAt', 'id', 'name', 'sizeBytes', 'template', 'workspaceId']);
    expect(snap).toMatchObject({ name: 'first', workspaceId: origin.id, template: 'minimal' });
    expect(snap.sizeBytes).toBeGreaterThan(0);
    const image = inspect('image', `keel-snapshot:${snap.id}`);
    expect(image.Config.Labels['dev.keel.snapshot']).toBe(snap.id);
    // The workspace runs on after the commit (its processes were paused only while it was written).
    expect(inspect('container', origin.containerId).State.Status).toBe('running');
    const list = (await (await api('/api/snapshots')).json()) as any;
    expect(list.snapshots.map((s: any) => s.id)).toEqual([snap.id]);
    expect(await (await api(`/api/snapshots/${snap.id}`)).json()).toEqual(snap);
  });

  test('a workspace created from the snapshot has the files of the volume and of the container file system', async () => {
    const res = await post('/api/workspaces', { name: 'restored', snapshot: snap.id });
    expect(res.status).toBe(201);
    const ws = await waitStatus(p, ((await res.json()) as any).id, 'running', { timeoutMs: 90_000 });
    expect(ws.template).toBe('minimal');
    expect(await sh(ws.id, 'cat /workspace/vol.txt /tmp/outside.txt')).toBe('in-volume\noutside');
  }, 120_000);

  test('a fork of 3 makes name-1..name-3 from one snapshot, each with the files, each apart from the others', async () => {
    const res = await post(`/api/workspaces/${origin.id}/fork`, { name: 'copy', count: 3 });
    expect(res.status).toBe(201);
    forks = ((await res.json()) as any).workspaces;
    expect(forks.map((w) => w.name)).toEqual(['copy-1', 'copy-2', 'copy-3']);
    for (const w of forks) await waitStatus(p, w.id, 'running', { timeoutMs: 90_000 });
    for (const w of forks) expect(await sh(w.id, 'cat /workspace/vol.txt /tmp/outside.txt')).toBe('in-volume\noutside');
    await sh(forks[0].id, 'echo only-here > /workspace/mine.txt');
    expect(await sh(forks[1].id, 'ls /workspace')).toBe('vol.txt');
    const names = ((await (await api('/api/snapshots')).json()) as any).snapshots.map((s: any) => s.name);
    expect(names).toEqual(['first', 'copy']);
  }, 240_000);

  test('a fork asks 1 to 10 workspaces: 0 and 11 answer 400 and nothing is made', async () => {
    for (const count of [0, 11]) {
      const res = await post(`/api/workspaces/${origin.id}/fork`, { name: 'many', count });
      expect(res.status).toBe(400);
    }
    expect(((await (await api('/api/snapshots')).json()) as any).snapshots).toHaveLength(2);
  });

  test("another actor's snapshot, and snapshots or forks of another actor's workspace, answer 404", async () => {
    for (const [method, path] of [['GET', `/api/snapshots/${snap.id}`], ['DELETE', `/api/snapshots/${snap.id}`]] as const) {
      const res = await api(path, { method, as: 'mallory' });
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe('SNAPSHOT_NOT_FOUND');
    }
    const create = await post('/api/workspaces', { name: 'stolen', snapshot: snap.id }, 'mallory');
    expect(create.status).toBe(404);
    expect(await errorCode(create)).toBe('SNAPSHOT_NOT_FOUND');
    expect((await post(`/api/workspaces/${origin.id}/snapshots`, { name: 'x' }, 'mallory')).status).toBe(404);
    expect((await post(`/api/workspaces/${origin.id}/fork`, { name: 'x', count: 1 }, 'mallory')).status).toBe(404);
    expect(((await (await api('/api/snapshots', { as: 'mallory' })).json()) as any).snapshots).toEqual([]);
  });

  test('past APP_QUOTA_SNAPSHOTS (3) a snapshot answers 429 QUOTA_EXCEEDED and nothing is committed', async () => {
    expect((await post(`/api/workspaces/${origin.id}/snapshots`, { name: 'third' })).status).toBe(201);
    const res = await post(`/api/workspaces/${origin.id}/snapshots`, { name: 'fourth' });
    expect(res.status).toBe(429);
    expect(((await res.json()) as any).error.details).toEqual({ quota: 'snapshots', limit: 3 });
    expect(docker('images', '-q', '--filter', `label=dev.keel.instance=${instance}`).stdout.split('\n').filter(Boolean)).toHaveLength(3);
  });

  let copy: any;

  test('a snapshot that workspaces run from is deleted with 200: it is 404 afterwards and cannot be created from, its image stays for them', async () => {
    copy = ((await (await api('/api/snapshots')).json()) as any).snapshots.find((s: any) => s.name === 'copy');
    const del = await api(`/api/snapshots/${copy.id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ id: copy.id, deleted: true });
    const gone = await api(`/api/snapshots/${copy.id}`);
    expect(gone.status).toBe(404);
    expect(await errorCode(gone)).toBe('SNAPSHOT_NOT_FOUND');
    expect(((await (await api('/api/snapshots')).json()) as any).snapshots.map((s: any) => s.name)).toEqual(['first', 'third']);
    const create = await post('/api/workspaces', { name: 'from-deleted', snapshot: copy.id });
    expect(create.status).toBe(404);
    expect(await errorCode(create)).toBe('SNAPSHOT_NOT_FOUND');
    expect((await api(`/api/snapshots/${copy.id}`, { method: 'DELETE' })).status).toBe(404);
    // What the forks run from is still there.
    expect(inspect('image', `keel-snapshot:${copy.id}`)).not.toBeNull();
  });

  test('a workspace made from a deleted snapshot still runs, restarts and starts again after a stop, with its files', async () => {
    const w = forks[0];
    const current = (await (await api(`/api/workspaces/${w.id}`)).json()) as any;
    expect(current.status).toBe('running');
    expect(inspect('container', current.containerId).State.Status).toBe('running');
    expect((await post(`/api/workspaces/${w.id}/restart`, {})).status).toBe(200);
    await waitStatus(p, w.id, 'running', { timeoutMs: 60_000 });
    expect(await sh(w.id, 'cat /workspace/vol.txt /tmp/outside.txt /workspace/mine.txt')).toBe('in-volume\noutside\nonly-here');
    expect((await post(`/api/workspaces/${w.id}/stop`, {})).status).toBe(200);
    await waitStatus(p, w.id, 'stopped', { timeoutMs: 60_000 });
    expect((await post(`/api/workspaces/${w.id}/start`, {})).status).toBe(200);
    await waitStatus(p, w.id, 'running', { timeoutMs: 60_000 });
    expect(await sh(w.id, 'cat /tmp/outside.txt /workspace/mine.txt')).toBe('outside\nonly-here');
  }, 180_000);

  test('the deleted snapshot freed its quota slot at once: a new snapshot is accepted at the quota (3), the next refused', async () => {
    const res = await post(`/api/workspaces/${origin.id}/snapshots`, { name: 'fourth' });
    expect(res.status).toBe(201);
    const over = await post(`/api/workspaces/${origin.id}/snapshots`, { name: 'fifth' });
    expect(over.status).toBe(429);
    expect(await errorCode(over)).toBe('QUOTA_EXCEEDED');
  }, 60_000);

  test('snapshots survive a restart of Keel, and an image and an archive left without a row (a snapshot cut short) are removed', async () => {
    // What a crash between the commit and the row leaves: an image with this instance's snapshot labels, and an archive.
    const orphan = 'snap_orphanleftbycrash';
    expect(docker('commit', '--change', 'LABEL dev.keel.managed=true', '--change', `LABEL dev.keel.instance=${instance}`, '--change', `LABEL dev.keel.snapshot=${orphan}`, origin.containerId, `keel-snapshot:${orphan}`).code).toBe(0);
    writeFileSync(join(dataDir, 'snapshots', `${orphan}.tar`), 'partial');
    await p.close();
    p = await startTestPlatform({ services: ['workspaces'], env, dataDir });
    expect(inspect('image', `keel-snapshot:${orphan}`)).toBeNull();
    expect(existsSync(join(dataDir, 'snapshots', `${orphan}.tar`))).toBe(false);
    const after = ((await (await api('/api/snapshots')).json()) as any).snapshots.map((s: any) => s.name);
    expect(after).toEqual(['first', 'third', 'fourth']);
    expect(inspect('image', `keel-snapshot:${snap.id}`)).not.toBeNull();
    // A deleted snapshot's image and archive are no orphans while workspaces made from it exist.
    expect(inspect('image', `keel-snapshot:${copy.id}`)).not.toBeNull();
    expect(existsSync(join(dataDir, 'snapshots', `${copy.id}.tar`))).toBe(true);
  }, 120_000);

  test("a deleted snapshot's image and archive stay until the last workspace made from it is deleted, then go", async () => {
    for (const w of forks.slice(0, -1)) expect((await api(`/api/workspaces/${w.id}?volumes=true`, { method: 'DELETE' })).status).toBe(200);
    expect(inspect('image', `keel-snapshot:${copy.id}`)).not.toBeNull();
    expect((await api(`/api/workspaces/${forks.at(-1).id}?volumes=true`, { method: 'DELETE' })).status).toBe(200);
    expect(inspect('image', `keel-snapshot:${copy.id}`)).toBeNull();
    expect(existsSync(join(dataDir, 'snapshots', `${copy.id}.tar`))).toBe(false);
  }, 120_000);

  test('a snapshot no workspace was made from leaves the engine and the disk when deleted', async () => {
    const third = ((await (await api('/api/snapshots')).json()) as any).snapshots.find((s: any) => s.name === 'third');
    const del = await api(`/api/snapshots/${third.id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ id: third.id, deleted: true });
    expect(inspect('image', `keel-snapshot:${third.id}`)).toBeNull();
    expect(existsSync(join(dataDir, 'snapshots', `${third.id}.tar`))).toBe(false);
  });
});
