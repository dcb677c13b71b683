// Keel restarted on the same data dir while its engine does not answer, then once more with the
// engine back: nothing is lost or removed meanwhile, engine-bound routes answer 503
// ENGINE_UNAVAILABLE, and the workspace is whole again once the engine answers.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { inspect, keelInstance, removeInstanceObjects } from '../../helpers/docker';
import { createRunning, errorCode, getWorkspace, waitStatus } from '../../helpers/workspaces';

const dataDir = mkdtempSync(join(tmpdir(), 'keel-engine-away-'));
const env = { APP_WORKSPACE_PORT_RANGE: '23700-23749' };
let instance = '';
let ws: any;
let away: TestPlatform | undefined;
let back: TestPlatform | undefined;

beforeAll(async () => {
  const first = await startTestPlatform({ services: ['workspaces'], dataDir, env });
  instance = keelInstance(dataDir);
  ws = await createRunning(first, 'survives-outage');
  await first.close();
  // Nothing listens on port 1: every engine call is refused at the socket.
  away = await startTestPlatform({ services: ['workspaces'], dataDir, env: { ...env, DOCKER_HOST: 'tcp://127.0.0.1:1' } });
}, 60_000);

afterAll(async () => {
  await away?.close();
  await back?.close();
  if (instance) await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
});

test('without an engine, the stored workspace is still listed and readable', async () => {
  const { status, body } = await getWorkspace(away!, ws.id);
  expect(status).toBe(200);
  expect(body).toMatchObject({ id: ws.id, name: 'survives-outage', containerId: ws.containerId });
});

test('without an engine, delete answers 503 ENGINE_UNAVAILABLE and keeps the workspace', async () => {
  const res = await away!.api('workspaces', `/api/workspaces/${ws.id}?volumes=true`, { method: 'DELETE' });
  expect(res.status).toBe(503);
  expect(await errorCode(res)).toBe('ENGINE_UNAVAILABLE');
  expect((await getWorkspace(away!, ws.id)).status).toBe(200);
});

test('without an engine, exec answers 503 ENGINE_UNAVAILABLE', async () => {
  const res = await away!.api('workspaces', `/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command: 'true' } });
  expect(res.status).toBe(503);
  expect(await errorCode(res)).toBe('ENGINE_UNAVAILABLE');
});

test('a start-up without an engine removed nothing: with the engine back, the same container runs on', async () => {
  await away!.close();
  away = undefined;
  expect(inspect('container', ws.containerId)?.State?.Running).toBe(true);
  back = await startTestPlatform({ services: ['workspaces'], dataDir, env });
  const w = await waitStatus(back, ws.id, 'running');
  expect(w.containerId).toBe(ws.containerId);
  const del = await back.api('workspaces', `/api/workspaces/${ws.id}?volumes=true`, { method: 'DELETE' });
  expect(del.status).toBe(200);
  expect(inspect('container', ws.containerId)).toBeNull();
});
