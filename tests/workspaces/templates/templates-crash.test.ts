// A real Keel process killed with SIGKILL while a template builds, then started again on the same
// data dir: the build is never left `building`. It runs again from its stored Dockerfile and
// context and ends ready, and a workspace starts from it.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { docker, waitFor } from '../../helpers/docker';
import { requireTestEnv } from '../../helpers/platform';
import { killableWorkspaces } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const keel = killableWorkspaces('templates-crash', { APP_WORKSPACE_PORT_RANGE: '27950-27979', APP_AUTO_STOP_MINUTES: '0' });
const call = keel.call;
let templateId = '';

beforeAll(() => keel.start(), 120_000);

afterAll(async () => {
  await keel.kill();
  for (const ref of docker('images', '--format', '{{.Repository}}:{{.Tag}}', 'keel-template').stdout.split('\n').filter((r) => templateId && r.includes(templateId))) docker('rmi', '-f', ref);
  await keel.cleanup();
});

test('kill -9 mid-build: after the restart the build runs again and ends ready, never stuck in building', async () => {
  const created = await call('POST', '/api/templates', { name: 'slow', dockerfile: 'FROM keel/minimal\nUSER root\nCOPY stamp /stamp\nRUN sleep 3 && mkdir -p /opt && echo built > /opt/built\n', files: { stamp: `${Date.now()} ${Math.random()}` } });
  expect(created.status).toBe(202);
  const { id, buildId } = created.body;
  templateId = id;
  // Mid-build: the RUN step has started (the stamp keeps the engine's cache from answering at once).
  await waitFor('the RUN step', async () => ((await call('GET', `/api/templates/${id}/builds/${buildId}/logs`)).body.lines as { message: string }[]).some((l) => /RUN sleep 3/.test(l.message)) || null, 60_000);
  expect((await call('GET', `/api/templates/${id}`)).body.status).toBe('building');
  await keel.kill();

  await keel.start();
  const t = await waitFor('the build to end', async () => {
    const v = (await call('GET', `/api/templates/${id}`)).body;
    return v.status === 'building' ? null : v;
  }, 90_000);
  expect(t).toMatchObject({ status: 'ready', version: 1, reason: null });
  const log = (await call('GET', `/api/templates/${id}/builds/${buildId}/logs`)).body;
  expect(log.status).toBe('ready');
  const ws = await call('POST', '/api/workspaces', { name: 'after-crash', template: 'slow' });
  expect(ws.status).toBe(201);
  await waitFor('the workspace to run', async () => ((await call('GET', `/api/workspaces/${ws.body.id}`)).body.status === 'running' ? true : null), 90_000);
  expect((await call('POST', `/api/workspaces/${ws.body.id}/exec`, { command: 'cat /opt/built' })).body.stdout).toBe('built\n');
}, 240_000);
