// A real Keel process killed with SIGKILL while a pause and a snapshot are in flight, then started
// again on the same data dir: nothing is left stuck. The paused workspace shows what the engine says
// (paused or running) and moves on from there; a snapshot is either listed with its image, or gone
// with no image or archive left behind.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { docker, inspect, keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, TEST_SECRET } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const dataDir = mkdtempSync(join(tmpdir(), 'keel-policies-crash-'));
const env = { APP_DATA_DIR: dataDir, APP_WORKSPACE_PORT_RANGE: '23700-23759', APP_AUTO_STOP_MINUTES: '0' };
const headers = { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 900 })}`, 'content-type': 'application/json' };

let keel: KeelProcess | undefined;
let instance = '';

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(keel!.urls.workspaces + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
const view = async (id: string) => (await call('GET', `/api/workspaces/${id}`)).body;

async function createRunning(name: string): Promise<any> {
  const r = await call('POST', '/api/workspaces', { name, template: 'minimal' });
  expect(r.status).toBe(201);
  return waitFor(`${name} to run`, async () => ((await view(r.body.id)).status === 'running' ? view(r.body.id) : null), 90_000);
}

let paused: any;
let snapped: any;

beforeAll(async () => {
  keel = await startKeel([BUN, 'src/main.ts'], env, ['workspaces']);
  instance = keelInstance(dataDir);
  paused = await createRunning('to-pause');
  snapped = await createRunning('to-snapshot');
  await call('POST', `/api/workspaces/${snapped.id}/exec`, { command: 'head -c 2000000 /dev/urandom > /workspace/big.bin' });
  // Both in flight, then SIGKILL: no shutdown hook runs.
  void fetch(keel.urls.workspaces + `/api/workspaces/${paused.id}/pause`, { method: 'POST', headers }).catch(() => {});
  void fetch(keel.urls.workspaces + `/api/workspaces/${snapped.id}/snapshots`, { method: 'POST', headers, body: JSON.stringify({ name: 'cut' }) }).catch(() => {});
  await Bun.sleep(150);
  keel.proc.kill('SIGKILL');
  await keel.proc.exited;
  keel = await startKeel([BUN, 'src/main.ts'], env, ['workspaces']);
}, 240_000);

afterAll(async () => {
  keel?.proc.kill('SIGKILL');
  await keel?.proc.exited;
  for (const ref of docker('images', '-q', '--filter', `label=dev.keel.instance=${instance}`).stdout.split('\n').filter(Boolean)) docker('rmi', '-f', ref);
  if (instance) await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
});

test('the workspace whose pause was cut short shows what the engine says, and resumes or pauses from there', async () => {
  const w = await view(paused.id);
  const engineSays = inspect('container', paused.containerId).State.Paused ? 'paused' : 'running';
  expect(w.status).toBe(engineSays);
  if (engineSays === 'paused') expect((await call('POST', `/api/workspaces/${paused.id}/resume`)).body).toEqual({ id: paused.id, status: 'running' });
  expect((await call('POST', `/api/workspaces/${paused.id}/pause`)).body).toEqual({ id: paused.id, status: 'paused' });
  expect((await call('POST', `/api/workspaces/${paused.id}/resume`)).status).toBe(200);
  expect(inspect('container', paused.containerId).State.Paused).toBe(false);
});

test('the snapshot cut short is listed with its image, or left nothing behind; the workspace it was taken of runs on', async () => {
  const listed = (await call('GET', '/api/snapshots')).body.snapshots as { id: string }[];
  const images = docker('images', '--format', '{{.Repository}}:{{.Tag}}', '--filter', `label=dev.keel.instance=${instance}`).stdout.split('\n').filter(Boolean);
  const archives = existsSync(join(dataDir, 'snapshots')) ? readdirSync(join(dataDir, 'snapshots')) : [];
  expect(images.sort()).toEqual(listed.map((s) => `keel-snapshot:${s.id}`).sort());
  expect(archives.sort()).toEqual(listed.map((s) => `${s.id}.tar`).sort());
  // The commit the crash cut short may still run in the engine, which pauses the container meanwhile
  // (Keel then shows it paused, as the engine says): once the engine ends it, the workspace runs on.
  await waitFor('the engine to end the commit the crash cut short', () => !inspect('container', snapped.containerId).State.Paused, 60_000);
  await waitFor('the workspace to show running', async () => (await view(snapped.id)).status === 'running', 10_000);
  // And a snapshot taken now works.
  const again = await call('POST', `/api/workspaces/${snapped.id}/snapshots`, { name: 'after' });
  expect(again.status).toBe(201);
});
