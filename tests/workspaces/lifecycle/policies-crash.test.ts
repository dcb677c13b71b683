// A real Keel process killed with SIGKILL while a pause and a snapshot are in flight, then started
// again on the same data dir: nothing is left stuck. The paused workspace shows what the engine says
// (paused or running) and moves on from there; a snapshot is either listed with its image, or gone
// with no image or archive left behind.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { docker, inspect, waitFor } from '../../helpers/docker';
import { requireTestEnv } from '../../helpers/platform';
import { killableWorkspaces } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const keel = killableWorkspaces('policies-crash', { APP_WORKSPACE_PORT_RANGE: '23700-23759', APP_AUTO_STOP_MINUTES: '0' });
const { call, dataDir } = keel;
const view = async (id: string) => (await call('GET', `/api/workspaces/${id}`)).body;

async function createRunning(name: string): Promise<any> {
  const r = await call('POST', '/api/workspaces', { name, template: 'minimal' });
  expect(r.status).toBe(201);
  return waitFor(`${name} to run`, async () => ((await view(r.body.id)).status === 'running' ? view(r.body.id) : null), 90_000);
}

let paused: any;
let snapped: any;

beforeAll(async () => {
  await keel.start();
  paused = await createRunning('to-pause');
  snapped = await createRunning('to-snapshot');
  await call('POST', `/api/workspaces/${snapped.id}/exec`, { command: 'head -c 2000000 /dev/urandom > /workspace/big.bin' });
  // Both in flight, then SIGKILL: no shutdown hook runs.
  keel.send('POST', `/api/workspaces/${paused.id}/pause`);
  keel.send('POST', `/api/workspaces/${snapped.id}/snapshots`, { name: 'cut' });
  await Bun.sleep(150);
  await keel.kill();
  await keel.start();
}, 240_000);

afterAll(async () => {
  await keel.kill();
  for (const ref of docker('images', '-q', '--filter', `label=dev.keel.instance=${keel.instance}`).stdout.split('\n').filter(Boolean)) docker('rmi', '-f', ref);
  await keel.cleanup();
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
  const images = docker('images', '--format', '{{.Repository}}:{{.Tag}}', '--filter', `label=dev.keel.instance=${keel.instance}`).stdout.split('\n').filter(Boolean);
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
