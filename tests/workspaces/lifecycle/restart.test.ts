// Keel restarted over the same data dir reconciles what changed on the engine while it was down,
// then keeps following engine events.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, keelInstance, removeInstanceObjects } from '../../helpers/docker';
import { waitStatus } from '../../helpers/workspaces';

const dataDir = mkdtempSync(join(tmpdir(), 'keel-restart-'));
const env = { APP_WORKSPACE_PORT_RANGE: '23500-23599' };
let before: TestPlatform | undefined;
let after: TestPlatform | undefined;
let instance = '';
const ws: Record<string, any> = {};
let orphan = '';

const view = async (p: TestPlatform, id: string) => (await (await p.api('workspaces', `/api/workspaces/${id}`)).json()) as any;

beforeAll(async () => {
  before = await startTestPlatform({ services: ['workspaces'], dataDir, env });
  instance = keelInstance(dataDir);
  for (const name of ['keeps-running', 'stopped-while-down', 'removed-while-down', 'creating-at-crash']) {
    const res = await before.api('workspaces', '/api/workspaces', { method: 'POST', json: { name, template: 'minimal' } });
    ws[name] = (await res.json()) as any;
  }
  for (const name of Object.keys(ws)) {
    ws[name] = await waitStatus(before, ws[name].id, 'running', { timeoutMs: 20_000 });
  }
  await before.close();
  before = undefined;

  // While Keel is down: one container stopped, one removed, a row left in `creating` as a crash
  // mid-creation would leave it, and a container of this instance that belongs to no workspace.
  expect(docker('stop', '-t', '1', ws['stopped-while-down'].containerId).code).toBe(0);
  expect(docker('rm', '-f', ws['removed-while-down'].containerId).code).toBe(0);
  const db = new Database(join(dataDir, 'keel.db'));
  db.query(`update workspaces_workspaces set status = 'creating' where id = ?`).run(ws['creating-at-crash'].id);
  db.close();
  orphan = docker('run', '-d', '--label', 'dev.keel.managed=true', '--label', `dev.keel.instance=${instance}`, '--label', 'dev.keel.workspace=ws_gone', ws['keeps-running'].containerId ? inspect('container', ws['keeps-running'].containerId).Config.Image : 'keel/minimal:1', 'sleep', '300').stdout;

  after = await startTestPlatform({ services: ['workspaces'], dataDir, env });
}, 60_000);

afterAll(async () => {
  await before?.close();
  await after?.close();
  if (instance) await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
});

test('a workspace whose container kept running is still running, same container', async () => {
  const w = await view(after!, ws['keeps-running'].id);
  expect(w.status).toBe('running');
  expect(w.containerId).toBe(ws['keeps-running'].containerId);
});

test('a container stopped while Keel was down is reported stopped', async () => {
  expect((await view(after!, ws['stopped-while-down'].id)).status).toBe('stopped');
});

test('a container removed while Keel was down is reported failed with the reason', async () => {
  const w = await view(after!, ws['removed-while-down'].id);
  expect(w.status).toBe('failed');
  expect(w.containerId).toBeNull();
  expect(w.reason).toContain('removed outside Keel');
});

test('a creation interrupted by the restart is finished over the container it had made', async () => {
  const w = await view(after!, ws['creating-at-crash'].id);
  expect(w.status).toBe('running');
  expect(w.containerId).toBe(ws['creating-at-crash'].containerId);
  expect(inspect('container', w.containerId).State.Running).toBe(true);
});

test('a container of this Keel that belongs to no workspace is removed', () => {
  expect(orphan).toMatch(/^[0-9a-f]{64}$/);
  expect(inspect('container', orphan)).toBeNull();
});

test('after the restart, engine events are followed again', async () => {
  expect(docker('start', ws['stopped-while-down'].containerId).code).toBe(0);
  await waitStatus(after!, ws['stopped-while-down'].id, 'running', { timeoutMs: 15_000 });
});
