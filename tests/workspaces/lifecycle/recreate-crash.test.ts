// A re-create (start of a workspace whose container was removed outside Keel) cut by SIGKILL after
// the engine made the new container but before Keel recorded it: the restarted Keel finishes the
// start instead of colliding with the unrecorded container's name, and leaves one container.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { docker, inspect, keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, TEST_SECRET } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const dataDir = mkdtempSync(join(tmpdir(), 'keel-recreate-'));
const env = { APP_DATA_DIR: dataDir, APP_WORKSPACE_PORT_RANGE: '23700-23799' };
const headers = { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 900 })}`, 'content-type': 'application/json' };

let keel: KeelProcess | undefined;
let instance = '';
let id = '';
let atCrash: { status: string; containerId: string | null } = { status: '', containerId: null };
let orphan = '';

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(keel!.urls.workspaces + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
const view = async () => (await call('GET', `/api/workspaces/${id}`)).body;
const waitStatus = (status: string) => waitFor(`${id} to be ${status}`, async () => ((await view()).status === status ? view() : null), 60_000);
const containersOf = () => docker('ps', '-aq', '--no-trunc', '--filter', `label=dev.keel.workspace=${id}`).stdout.split('\n').filter(Boolean);

function row(): { status: string; containerId: string | null } {
  const db = new Database(join(dataDir, 'keel.db'), { readonly: true });
  try {
    return db.query('select status, container_id as containerId from workspaces_workspaces where id = ?').get(id) as { status: string; containerId: string | null };
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  keel = await startKeel([BUN, 'src/main.ts'], env, ['workspaces']);
  instance = keelInstance(dataDir);
  const created = await call('POST', '/api/workspaces', { name: 'recreated', template: 'minimal' });
  expect(created.status).toBe(201);
  id = created.body.id;
  const first = await waitStatus('running');
  // Removed behind Keel's back: the workspace fails, and its next start re-creates the container.
  const original = inspect('container', first.containerId);
  docker('rm', '-f', first.containerId);
  await waitFor('the removal to be seen', async () => ((await view()).containerId === null ? true : null));

  expect((await call('POST', `/api/workspaces/${id}/start`)).status).toBe(200);
  keel.proc.kill('SIGKILL');
  await keel.proc.exited;
  keel = undefined;
  atCrash = row();
  // What the crash leaves when it lands between the engine's create and the record: a container of
  // the workspace, under the name the re-create uses, that no row names. Made here if the kill came
  // before the engine call, so the state is the same on every run.
  const unrecorded = containersOf();
  if (unrecorded.length === 0 && atCrash.containerId === null) {
    const labels = Object.entries(original.Config.Labels as Record<string, string>).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    docker('create', '--name', original.Name.replace(/^\//, ''), ...labels, original.Config.Image, 'sleep', '300');
  }
  orphan = containersOf()[0] ?? '';
  keel = await startKeel([BUN, 'src/main.ts'], env, ['workspaces']);
}, 180_000);

afterAll(async () => {
  await keel?.stop();
  if (instance) await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
});

test('the kill left the start in progress with a container the workspace row does not name', () => {
  expect(atCrash.status).toBe('starting');
  expect(atCrash.containerId).toBeNull();
  expect(orphan).toMatch(/^[0-9a-f]{64}$/);
});

test('the restarted Keel finishes the re-create: the workspace runs', async () => {
  const w = await waitStatus('running');
  expect(w.reason).toBeUndefined();
  expect(inspect('container', w.containerId).State.Running).toBe(true);
});

test('one container of the workspace is left, the one its row names', async () => {
  const w = await view();
  expect(containersOf()).toEqual([w.containerId]);
});
