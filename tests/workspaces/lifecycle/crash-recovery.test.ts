// A real Keel process killed with SIGKILL while create, start, stop and restart are in flight, then
// started again on the same data dir: each operation is finished (or ends failed with a reason)
// before the restarted Keel serves, and this instance's engine objects that no workspace owns are
// removed, while another instance's objects and a volume a delete kept are left alone.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { docker, inspect, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv } from '../../helpers/platform';
import { killableWorkspaces } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const keel = killableWorkspaces('crash', { APP_WORKSPACE_PORT_RANGE: '23600-23699', APP_WORKSPACE_CLONE_TIMEOUT: '600' });
const { call, dataDir } = keel;
const OTHER_INSTANCE = `keel_crash_test_other_${process.pid}`;

// A server that accepts connections and never answers: a repo clone from it hangs until Keel dies.
const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
const ids: Record<string, string> = {};
const containers: Record<string, string> = {};
let statusAtCrash: Record<string, string> = {};
let kept = { volume: '' };
const strays = { container: '', volume: '', otherContainer: '', otherVolume: '' };

const view = async (id: string) => (await call('GET', `/api/workspaces/${id}`)).body;
const waitStatus = (id: string, status: string) => waitFor(`${id} to be ${status}`, async () => ((await view(id)).status === status ? view(id) : null), 60_000);

async function createRunning(name: string): Promise<any> {
  const r = await call('POST', '/api/workspaces', { name, template: 'minimal' });
  expect(r.status).toBe(201);
  return waitStatus(r.body.id, 'running');
}

function rowsById(): Record<string, { status: string; containerId: string | null }> {
  const db = new Database(join(dataDir, 'keel.db'), { readonly: true });
  try {
    const rows = db.query('select id, status, container_id as containerId from workspaces_workspaces').all() as { id: string; status: string; containerId: string | null }[];
    return Object.fromEntries(rows.map((r) => [r.id, r]));
  } finally {
    db.close();
  }
}

const image = () => inspect('container', containers['to-stop']!)?.Config.Image ?? 'keel/minimal:1';

beforeAll(async () => {
  await keel.start();
  for (const name of ['to-stop', 'to-restart', 'to-start', 'kept-volume']) {
    const w = await createRunning(name);
    ids[name] = w.id;
    containers[name] = w.containerId;
  }
  expect((await call('POST', `/api/workspaces/${ids['to-start']}/stop`)).status).toBe(200);
  await waitStatus(ids['to-start']!, 'stopped');
  // A persistent workspace deleted without volumes=true keeps its volume on purpose.
  kept.volume = inspect('container', containers['kept-volume']!).Mounts.find((m: any) => m.Destination === '/workspace').Name;
  expect((await call('DELETE', `/api/workspaces/${ids['kept-volume']}`)).status).toBe(200);

  // Everything in flight at once, then SIGKILL: no shutdown hook runs.
  const answers = await Promise.all([
    call('POST', '/api/workspaces', { name: 'being-created', template: 'minimal' }),
    call('POST', '/api/workspaces', { name: 'cloning', template: 'minimal', repo: { url: `http://127.0.0.1:${silent.port}/slow.git` } }),
    call('POST', `/api/workspaces/${ids['to-stop']}/stop`),
    call('POST', `/api/workspaces/${ids['to-restart']}/restart`),
    call('POST', `/api/workspaces/${ids['to-start']}/start`),
  ]);
  expect(answers.map((a) => a.status)).toEqual([201, 201, 200, 200, 200]);
  ids['being-created'] = answers[0]!.body.id;
  ids.cloning = answers[1]!.body.id;
  // Killed as soon as every operation is accepted: each engine call takes far longer than that, and the
  // first test checks the kill did land mid-way (else the rest would not test recovery at all).
  await keel.kill();
  const rows = rowsById();
  statusAtCrash = Object.fromEntries(Object.entries(ids).map(([name, id]) => [name, rows[id]?.status ?? 'absent']));

  // While Keel is down: a container and a volume labelled with this instance for a workspace that
  // does not exist (what a crash between engine call and row could leave), and the same with
  // another instance's label, which this Keel must never touch.
  const labels = (inst: string, ws: string) => ['--label', 'dev.keel.managed=true', '--label', `dev.keel.instance=${inst}`, '--label', `dev.keel.workspace=${ws}`];
  strays.volume = docker('volume', 'create', ...labels(keel.instance, 'ws_never_stored')).stdout;
  strays.otherVolume = docker('volume', 'create', ...labels(OTHER_INSTANCE, 'ws_other')).stdout;
  strays.container = docker('create', ...labels(keel.instance, 'ws_never_stored'), image(), 'sleep', '300').stdout;
  strays.otherContainer = docker('create', ...labels(OTHER_INSTANCE, 'ws_other'), image(), 'sleep', '300').stdout;

  await keel.start();
}, 180_000);

afterAll(async () => {
  await keel.kill('SIGTERM');
  silent.stop(true);
  await keel.cleanup();
  await removeInstanceObjects(OTHER_INSTANCE);
});

describe('operations cut short by SIGKILL', () => {
  test('the kill landed while every operation was still in progress', () => {
    expect(statusAtCrash['being-created']).toBe('creating');
    expect(statusAtCrash.cloning).toBe('creating');
    expect(statusAtCrash['to-stop']).toBe('stopping');
    expect(statusAtCrash['to-restart']).toBe('restarting');
    expect(statusAtCrash['to-start']).toBe('starting');
  });

  test('no workspace is left in an in-progress status once the restarted Keel serves', async () => {
    const list = (await call('GET', '/api/workspaces')).body.workspaces as { status: string }[];
    expect(list.length).toBe(5);
    for (const w of list) expect(['running', 'stopped', 'failed']).toContain(w.status);
  });

  test('a creation is finished: the workspace runs, in a container carrying its labels', async () => {
    const w = await view(ids['being-created']!);
    expect(w.status).toBe('running');
    const c = inspect('container', w.containerId);
    expect(c.State.Running).toBe(true);
    expect(c.Config.Labels['dev.keel.workspace']).toBe(ids['being-created']);
    // One container only: none left over from the interrupted attempt.
    expect(docker('ps', '-aq', '--filter', `label=dev.keel.workspace=${ids['being-created']}`).stdout.split('\n').filter(Boolean)).toHaveLength(1);
  });

  test('a creation cut during its repo clone ends failed with the reason, its container removed', async () => {
    const w = await view(ids.cloning!);
    expect(w.status).toBe('failed');
    expect(w.reason).toContain('interrupted by a restart of Keel while the repo was being copied');
    expect(w.containerId).toBeNull();
    expect(docker('ps', '-aq', '--filter', `label=dev.keel.workspace=${ids.cloning}`).stdout).toBe('');
  });

  test('a stop is completed: stopped, the container not running', async () => {
    expect((await view(ids['to-stop']!)).status).toBe('stopped');
    expect(inspect('container', containers['to-stop']!).State.Running).toBe(false);
  });

  test('a restart is completed: running, same container', async () => {
    const w = await view(ids['to-restart']!);
    expect(w.status).toBe('running');
    expect(w.containerId).toBe(containers['to-restart']);
    expect(inspect('container', w.containerId).State.Running).toBe(true);
  });

  test('a start is completed: running', async () => {
    const w = await view(ids['to-start']!);
    expect(w.status).toBe('running');
    expect(inspect('container', w.containerId).State.Running).toBe(true);
  });
});

describe('engine objects without a workspace', () => {
  test("this instance's container and volume that no workspace owns are removed", () => {
    expect(strays.container).toMatch(/^[0-9a-f]{64}$/);
    expect(inspect('container', strays.container)).toBeNull();
    expect(inspect('volume', strays.volume)).toBeNull();
  });

  test("another Keel instance's container and volume are left alone", () => {
    expect(inspect('container', strays.otherContainer)).not.toBeNull();
    expect(inspect('volume', strays.otherVolume)).not.toBeNull();
  });

  test('the volume a delete kept on purpose survives the restart', () => {
    expect(inspect('volume', kept.volume)).not.toBeNull();
  });

  test('the restarted Keel still operates the recovered workspaces', async () => {
    expect((await call('POST', `/api/workspaces/${ids['to-stop']}/start`)).status).toBe(200);
    await waitStatus(ids['to-stop']!, 'running');
  });
});
