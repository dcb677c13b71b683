// A template people built, over two Docker engines (APP_ENGINES): the build runs on the first engine;
// a workspace placed on the second, which lacks the version's image (and the built-in base), gets it
// built there on first use from the same Dockerfile and context, and its exec sees the template's file
// and user.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, keelInstance, waitFor } from '../../helpers/docker';
import { closeAndClean, getWorkspace, waitStatus } from '../../helpers/workspaces';
import { dockerB, HOST as HOST_B, NETNS, NETNS_PATH, removeInstanceObjectsB, startSecondEngine } from '../../helpers/second-engine';
import { removeRules } from '../../../src/services/workspaces/network/firewall';
import { loadWorkspacesConfig } from '../../../src/services/workspaces/workspaces.config';

const minimalImage = loadWorkspacesConfig({}).minimalImage;
let p: TestPlatform;
let instance = '';
const post = (path: string, json: unknown) => p.api('workspaces', path, { method: 'POST', json, as: 'alice' });

beforeAll(async () => {
  await startSecondEngine();
  // Engine b starts with neither the built-in base nor any template image.
  dockerB('rmi', '-f', minimalImage);
  p = await startTestPlatform({
    services: ['workspaces'],
    env: { APP_ENGINES: `a=${process.env.DOCKER_HOST},b=${HOST_B}?netns=${NETNS}`, APP_ENGINE_CHECK_SECONDS: '1', APP_AUTO_STOP_MINUTES: '0' },
  });
  instance = keelInstance(p.dataDir);
}, 120_000);

afterAll(async () => {
  await closeAndClean(p);
  removeInstanceObjectsB(instance);
  await removeRules(instance, undefined, NETNS_PATH);
}, 120_000);

test('a workspace placed on the engine without the version image gets it built there, and runs as the template says', async () => {
  const res = await post('/api/templates', {
    name: 'two-engines',
    dockerfile: 'FROM keel/minimal\nUSER root\nCOPY note.txt /opt/note.txt\nUSER 1234:1234\nWORKDIR /opt\n',
    files: { 'note.txt': `built ${Date.now()}\n` },
  });
  expect(res.status).toBe(202);
  const { id } = (await res.json()) as any;
  const t = await waitFor('the template built', async () => {
    const v = (await (await p.api('workspaces', `/api/templates/${id}`, { as: 'alice' })).json()) as any;
    return v.status === 'building' ? null : v;
  }, 120_000);
  expect(t).toMatchObject({ status: 'ready', version: 1 });
  const image = `keel-template:${id}-v1`;
  expect(docker('image', 'inspect', image).code).toBe(0);
  expect(dockerB('image', 'inspect', image).code).not.toBe(0);

  // Placement takes the emptier engine: the first workspace goes to a (it has the image), the next to b.
  const made: { id: string; engine: string }[] = [];
  for (const name of ['eng-tpl-1', 'eng-tpl-2']) {
    const ws = (await (await post('/api/workspaces', { name, template: 'two-engines' })).json()) as any;
    await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 120_000 });
    made.push({ id: ws.id, engine: (await getWorkspace(p, ws.id, 'admin')).body.engine });
  }
  expect(made.map((m) => m.engine)).toEqual(['a', 'b']);
  expect(dockerB('image', 'inspect', image).code).toBe(0);
  for (const m of made) {
    const r = (await (await post(`/api/workspaces/${m.id}/exec`, { command: 'cat note.txt; id -u; pwd' })).json()) as any;
    expect(r).toMatchObject({ exitCode: 0 });
    expect(r.stdout).toMatch(/^built \d+\n1234\n\/opt\n$/);
  }
}, 300_000);
