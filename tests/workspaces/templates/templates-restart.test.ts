// A template's image gone from the engine while Keel was down (pruned, an engine replaced): at start-up
// Keel builds the current version again from its stored Dockerfile and context, in the background (a
// create meanwhile is 409 TEMPLATE_NOT_READY, never 400 or 5xx), and workspaces start from it again.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { docker, waitFor } from '../../helpers/docker';
import { requireTestEnv } from '../../helpers/platform';
import { killableWorkspaces } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const keel = killableWorkspaces('templates-restart', { APP_WORKSPACE_PORT_RANGE: '27980-27999', APP_AUTO_STOP_MINUTES: '0' });
const call = keel.call;
let templateId = '';

beforeAll(() => keel.start(), 120_000);

afterAll(async () => {
  await keel.kill();
  if (templateId) docker('rmi', '-f', `keel-template:${templateId}-v1`);
  await keel.cleanup();
});

test('an image gone while Keel was down is built again at start-up; creates are 409 until it is back, then run', async () => {
  const created = await call('POST', '/api/templates', {
    name: 'kept',
    dockerfile: 'FROM keel/minimal\nUSER root\nCOPY stamp /opt/stamp\nRUN sleep 2\nUSER 1000:1000\n',
    files: { stamp: `${Date.now()} ${Math.random()}\n` },
  });
  expect(created.status).toBe(202);
  templateId = created.body.id;
  const image = `keel-template:${templateId}-v1`;
  await waitFor('the build', async () => ((await call('GET', `/api/templates/${templateId}`)).body.status === 'ready' ? true : null), 90_000);
  await keel.kill('SIGTERM');
  // Pruned meanwhile, layers and all (nothing else uses them: the stamp is fresh).
  expect(docker('rmi', '-f', image).code).toBe(0);

  await keel.start();
  const answers = new Set<number>();
  const ws = await waitFor('a create accepted', async () => {
    const r = await call('POST', '/api/workspaces', { name: 'after-prune', template: 'kept' });
    answers.add(r.status);
    if (r.status === 409) expect(r.body.error.code).toBe('TEMPLATE_NOT_READY');
    return r.status === 201 ? r.body : null;
  }, 90_000, 200);
  expect([...answers].filter((s) => s !== 201 && s !== 409)).toEqual([]);
  await waitFor('the workspace to run', async () => ((await call('GET', `/api/workspaces/${ws.id}`)).body.status === 'running' ? true : null), 90_000);
  expect((await call('POST', `/api/workspaces/${ws.id}/exec`, { command: 'cat /opt/stamp' })).body.stdout).toMatch(/^\d+ /);
  expect(docker('image', 'inspect', image).code).toBe(0);
  expect((await call('GET', `/api/templates/${templateId}`)).body).toMatchObject({ status: 'ready', version: 1 });
}, 240_000);
