// A warm pool of a public template (APP_WARM_POOL names it by its name, the same for every caller):
// no entries while no public template of that name is ready; once an admin's build is ready, entries of
// its version are made (its readyCommand exited 0 first) and another actor's create claims one,
// `running` at once, with the template's file; a rebuild replaces the waiting entries with the new
// version's; a caller whose own template has that name is not given a public entry; a delete empties
// the pool.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { ownPortRange, requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, keelInstance, waitFor } from '../../helpers/docker';
import { closeAndClean, errorCode, templateBuilt, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let instance = '';
const post = (path: string, json: unknown, as = 'admin') => p.api('workspaces', path, { method: 'POST', json, as });
const get = async (path: string, as = 'admin') => (await (await p.api('workspaces', path, { as })).json()) as any;

const SHARED = `FROM keel/minimal
USER root
COPY shared.txt /opt/shared.txt
USER 1000:1000
`;

/**
 * Running pool containers of this Keel that no workspace owns and whose readyCommand's file is there
 * (the pool lists an entry once that command exited 0, polled every 500 ms): their template label.
 */
async function waiting(): Promise<string[]> {
  const owned = new Set(((await get('/api/workspaces')).workspaces as { id: string }[]).map((w) => w.id));
  const out = docker('ps', '--filter', `label=dev.keel.instance=${instance}`, '--filter', 'label=dev.keel.pool', '--format', '{{.ID}} {{.Label "dev.keel.workspace"}} {{.Label "dev.keel.pool"}}').stdout;
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ') as [string, string, string])
    .filter(([id, ws]) => !owned.has(ws) && inspect('container', id)?.State.Running && docker('exec', id, 'test', '-f', '/tmp/ready').code === 0)
    .map(([, , pool]) => pool);
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WARM_POOL: 'shared=1', APP_AUTO_STOP_MINUTES: '0', APP_WORKSPACE_PORT_RANGE: ownPortRange() } });
  instance = keelInstance(p.dataDir);
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
}, 60_000);

let id = '';

test('no entries while no public template has the name; once its build is ready, an entry of its version waits', async () => {
  expect(await waiting()).toEqual([]);
  const res = await post('/api/templates', {
    name: 'shared',
    public: true,
    dockerfile: SHARED,
    files: { 'shared.txt': `one ${Date.now()}\n` },
    startCommand: 'sleep 1; touch /tmp/ready; while :; do sleep 3600; done',
    readyCommand: 'test -f /tmp/ready',
  });
  expect(res.status).toBe(202);
  id = ((await res.json()) as any).id;
  await templateBuilt(p, id, { as: 'admin' });
  // The build's end refreshes the pool at once (no 30 s look-up wait).
  await waitFor('an entry of version 1', async () => (await waiting()).join() === `${id}.v1`, 60_000, 250);
  await Bun.sleep(1_000); // the pool's last poll of readyCommand
}, 180_000);

test("another actor's create claims it: running at once, readyCommand already passed, the template's file there", async () => {
  const res = await post('/api/workspaces', { name: 'bob-shared', template: 'shared' }, 'bob');
  expect(res.status).toBe(201);
  const ws = (await res.json()) as any;
  expect(ws.status).toBe('running');
  const r = (await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'test -f /tmp/ready && cat /opt/shared.txt; id -u' }, 'bob')).json()) as any;
  expect(r.exitCode).toBe(0);
  expect(r.stdout).toMatch(/^one \d+\n1000\n$/);
  // The pool makes the next one.
  await waitFor('the pool refilled', async () => (await waiting()).join() === `${id}.v1`, 60_000, 250);
}, 120_000);

test("a caller's own template of that name is made cold from theirs, the public entry left waiting", async () => {
  const own = await post('/api/templates', { name: 'shared', dockerfile: 'FROM keel/minimal\n' }, 'carol');
  expect(own.status).toBe(202);
  const ownId = ((await own.json()) as any).id;
  await templateBuilt(p, ownId, { as: 'carol' });
  const res = await post('/api/workspaces', { name: 'carol-shared', template: 'shared' }, 'carol');
  expect(res.status).toBe(201);
  const ws = (await res.json()) as any;
  expect(ws.status).toBe('creating');
  await waitStatus(p, ws.id, 'running', { as: 'carol', timeoutMs: 90_000 });
  const r = (await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'test -e /opt/shared.txt; echo $?' }, 'carol')).json()) as any;
  expect(r.stdout).toBe('1\n');
  expect(await waiting()).toEqual([`${id}.v1`]);
}, 180_000);

test('a rebuild replaces the waiting entry with one of the new version; a delete empties the pool', async () => {
  expect((await post(`/api/templates/${id}/builds`, {})).status).toBe(202);
  await templateBuilt(p, id, { version: 2, as: 'admin' });
  await waitFor('the entry of version 2 alone', async () => (await waiting()).join() === `${id}.v2`, 60_000, 250);
  const del = await p.api('workspaces', `/api/templates/${id}`, { method: 'DELETE', as: 'admin' });
  expect(del.status).toBe(200);
  await waitFor('the pool empty', async () => (await waiting()).length === 0, 60_000, 250);
  // No public template has the name any more (carol's own is hers): bob's create is refused, nothing claimed.
  const res = await post('/api/workspaces', { name: 'bob-late', template: 'shared' }, 'bob');
  expect(res.status).toBe(404);
  expect(await errorCode(res)).toBe('TEMPLATE_NOT_FOUND');
}, 180_000);
