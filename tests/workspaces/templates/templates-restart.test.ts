// A template's image gone from the engine while Keel was down (pruned, an engine replaced): at start-up
// Keel builds the current version again from its stored Dockerfile and context, in the background (a
// create meanwhile is 409 TEMPLATE_NOT_READY, never 400 or 5xx), and workspaces start from it again.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { docker, keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, TEST_SECRET } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');
const dataDir = mkdtempSync(join(tmpdir(), 'keel-templates-restart-'));
const env = { APP_DATA_DIR: dataDir, APP_WORKSPACE_PORT_RANGE: '27980-27999', APP_AUTO_STOP_MINUTES: '0' };
const headers = { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 900 })}`, 'content-type': 'application/json' };
let keel: KeelProcess | undefined;
let instance = '';
let templateId = '';

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(keel!.urls.workspaces + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  keel = await startKeel([BUN, 'src/main.ts'], env, ['workspaces']);
  instance = keelInstance(dataDir);
}, 120_000);

afterAll(async () => {
  keel?.proc.kill('SIGKILL');
  await keel?.proc.exited;
  if (templateId) docker('rmi', '-f', `keel-template:${templateId}-v1`);
  if (instance) await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
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
  keel!.proc.kill('SIGTERM');
  await keel!.proc.exited;
  // Pruned meanwhile, layers and all (nothing else uses them: the stamp is fresh).
  expect(docker('rmi', '-f', image).code).toBe(0);

  keel = await startKeel([BUN, 'src/main.ts'], env, ['workspaces']);
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
