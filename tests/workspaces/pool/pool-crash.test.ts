// A real Keel process with a warm pool (APP_WARM_POOL=minimal=1) killed with SIGKILL while a create
// claims an entry, then started again on the same data dir: nothing is left stuck. A claim answered
// before the kill runs on in its entry. The cut
// workspace is either stored and running in the entry's container, or absent with that container
// gone; entries of the killed run that nobody claimed are removed (containers, volumes, networks) and
// the pool is made again, serving the next create at once.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { docker, inspect, waitFor } from '../../helpers/docker';
import { ownPortRange, requireTestEnv } from '../../helpers/platform';
import { killableWorkspaces } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const keel = killableWorkspaces('pool-crash', { APP_WORKSPACE_PORT_RANGE: ownPortRange(), APP_AUTO_STOP_MINUTES: '0', APP_WARM_POOL: 'minimal=1' });
const call = keel.call;
/** Pool containers of the killed run, by the workspace id each was made for. */
let before: { id: string; workspace: string }[] = [];
/** A workspace whose claim was answered before the kill. */
let done: any;

function pooled(): { id: string; workspace: string }[] {
  const out = docker('ps', '-a', '--no-trunc', '--filter', `label=dev.keel.instance=${keel.instance}`, '--filter', 'label=dev.keel.pool=minimal', '--format', '{{.ID}} {{.Label "dev.keel.workspace"}}').stdout;
  return out.split('\n').filter(Boolean).map((l) => {
    const [id, workspace] = l.split(' ');
    return { id: id!, workspace: workspace! };
  });
}

async function ownedIds(): Promise<Set<string>> {
  return new Set(((await call('GET', '/api/workspaces')).body.workspaces as { id: string }[]).map((w) => w.id));
}

/** A pool entry running that no workspace owns. */
async function entryReady(): Promise<boolean> {
  const owned = await ownedIds();
  return pooled().some((c) => !owned.has(c.workspace) && inspect('container', c.id)?.State.Running);
}

beforeAll(async () => {
  await keel.start();
  await waitFor('the warm entry to be ready', entryReady, 120_000, 250);
  done = (await call('POST', '/api/workspaces', { name: 'warm-done', template: 'minimal' })).body;
  expect(done.status).toBe('running');
  await waitFor('the warm entry to be made again', entryReady, 120_000, 250);
  const owned = await ownedIds();
  // The claim takes this entry and starts the refill, so a second entry may be half made when the kill lands.
  before = pooled().filter((c) => !owned.has(c.workspace));
  keel.send('POST', '/api/workspaces', { name: 'warm-cut', template: 'minimal' });
  await Bun.sleep(10);
  await keel.kill();
  await keel.start();
}, 240_000);

afterAll(() => keel.cleanup());

test('the create cut short is a running workspace in the entry it claimed, or nothing at all', async () => {
  const list = (await call('GET', '/api/workspaces')).body.workspaces as any[];
  expect(list.every((w) => w.status !== 'creating')).toBe(true);
  const cut = list.find((w) => w.name === 'warm-cut');
  const entry = before[0]!;
  if (cut) {
    expect(cut.id).toBe(entry.workspace);
    expect(cut.containerId).toBe(entry.id);
    expect(cut.status).toBe('running');
    expect(inspect('container', cut.containerId).State.Running).toBe(true);
  } else {
    await waitFor('the unclaimed entry to be removed', async () => inspect('container', entry.id) === null, 30_000);
    expect(inspect('volume', `keel-ws-${entry.workspace.replace('_', '-')}`)).toBeNull();
  }
  console.log(`after the kill: ${cut ? 'claimed and running' : 'not claimed, entry removed'}`);
});

test('a workspace claimed before the kill runs on in its entry after the restart', async () => {
  const w = (await call('GET', `/api/workspaces/${done.id}`)).body;
  expect(w.status).toBe('running');
  expect(w.name).toBe('warm-done');
  expect(inspect('container', w.containerId).State.Running).toBe(true);
  expect(inspect('container', w.containerId).Config.Labels['dev.keel.workspace']).toBe(done.id);
});

test("the killed run's unclaimed entries are removed with their volumes and networks, and the pool is made again", async () => {
  const owned = await ownedIds();
  for (const c of before.filter((c) => !owned.has(c.workspace))) {
    expect(inspect('container', c.id)).toBeNull();
    expect(inspect('volume', `keel-ws-${c.workspace.replace('_', '-')}`)).toBeNull();
    expect(docker('network', 'inspect', `keel-${c.workspace}`).code).not.toBe(0);
  }
  await waitFor('a fresh warm entry', entryReady, 120_000, 250);
  // Exactly the pool's size is left: a half-made entry of the killed run went too.
  await waitFor('only the fresh entry to be left', async () => pooled().filter((c) => !owned.has(c.workspace)).length === 1, 30_000);
  const fresh = pooled().filter((c) => !owned.has(c.workspace));
  expect(fresh.every((c) => !before.some((b) => b.id === c.id))).toBe(true);
  const r = await call('POST', '/api/workspaces', { name: 'after-crash', template: 'minimal' });
  expect(r.status).toBe(201);
  expect(r.body.status).toBe('running');
});
