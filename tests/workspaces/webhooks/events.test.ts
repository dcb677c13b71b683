// Every workspace event on real transitions of a `minimal` workspace on the test engine, including a
// container stopped behind Keel's back with the docker CLI, delivered to a real receiver: payload
// shape, both signatures checked with the receivers' libraries, unique delivery ids, order.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker } from '../../helpers/docker';
import { closeAndClean, createRunning, waitStatus } from '../../helpers/workspaces';
import { startReceiver, type Receiver, type Received } from './receiver';

const SECRET = 'plain-text-secret-for-events';
const WHSEC = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');
let p: TestPlatform;
let rx: Receiver;

beforeAll(async () => {
  rx = startReceiver();
  // Host ports of its own: other test files run on the same engine at the same time.
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24700-24749' } });
  for (const [path, secret] of [['plain', SECRET], ['whsec', WHSEC]] as const) {
    const res = await p.api('workspaces', '/api/webhooks', { method: 'POST', as: 'wendy', json: { url: `${rx.url}/${path}`, events: ['*'], secret } });
    expect(res.status).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  await closeAndClean(p);
  rx.stop();
});

const eventsAt = (path: string, ws: string) => rx.received.filter((r) => r.path === `/hook/${path}` && r.body?.workspace?.id === ws);

async function verifyBoth(r: Received) {
  const secret = r.path === '/hook/whsec' ? WHSEC : SECRET;
  expect(await verifyGithub(secret, r.raw, r.headers['x-webhook-signature']!)).toBe(true);
  const wh = secret.startsWith('whsec_') ? new Webhook(secret) : new Webhook(secret, { format: 'raw' });
  expect(wh.verify(r.raw, r.headers)).toEqual(r.body);
}

test('create, start, a stop behind Keel\'s back, restart, stop, start and delete each reach the receiver, in order and signed', async () => {
  const w = await createRunning(p, 'hooked', { as: 'wendy' });
  docker('kill', w.containerId);
  await waitStatus(p, w.id, 'stopped', { as: 'wendy' });
  expect((await p.api('workspaces', `/api/workspaces/${w.id}/restart`, { method: 'POST', as: 'wendy' })).status).toBe(200);
  await rx.waitFor('restarted', (r) => r.body?.event === 'workspace.restarted' && r.body.workspace.id === w.id);
  await waitStatus(p, w.id, 'running', { as: 'wendy' });
  await rx.waitFor('started again', (r) => r.path === '/hook/plain' && r.body?.event === 'workspace.started' && r.body.workspace.id === w.id, 2);
  expect((await p.api('workspaces', `/api/workspaces/${w.id}/stop`, { method: 'POST', as: 'wendy' })).status).toBe(200);
  await waitStatus(p, w.id, 'stopped', { as: 'wendy' });
  expect((await p.api('workspaces', `/api/workspaces/${w.id}/start`, { method: 'POST', as: 'wendy' })).status).toBe(200);
  await waitStatus(p, w.id, 'running', { as: 'wendy' });
  expect((await p.api('workspaces', `/api/workspaces/${w.id}?volumes=true`, { method: 'DELETE', as: 'wendy' })).status).toBe(200);

  const expected = [
    ['workspace.created', 'creating'],
    ['workspace.started', 'running'],
    ['workspace.stopped', 'stopped'],
    ['workspace.restarted', 'running'],
    ['workspace.started', 'running'],
    ['workspace.stopped', 'stopped'],
    ['workspace.started', 'running'],
    ['workspace.deleted', expect.any(String)],
  ];
  for (const path of ['plain', 'whsec']) {
    await rx.waitFor(`deleted at ${path}`, (r) => r.path === `/hook/${path}` && r.body?.event === 'workspace.deleted' && r.body.workspace.id === w.id);
    const got = eventsAt(path, w.id);
    expect(got.map((r) => [r.body.event, r.body.workspace.status])).toEqual(expected);
    for (const r of got) {
      expect(r.headers['x-webhook-event']).toBe(r.body.event);
      expect(r.headers['webhook-id']).toBe(r.headers['x-webhook-delivery']!);
      expect(new Date(r.body.timestamp).toISOString()).toBe(r.body.timestamp);
      expect(r.body.workspace).toMatchObject({ id: w.id, name: 'hooked' });
      expect(Object.keys(r.body).sort()).toEqual(['event', 'timestamp', 'workspace']);
      await verifyBoth(r);
    }
  }
  const ids = [...eventsAt('plain', w.id), ...eventsAt('whsec', w.id)].map((r) => r.headers['x-webhook-delivery']);
  expect(new Set(ids).size).toBe(ids.length);
}, 120_000);

test('a workspace that fails is delivered as workspace.failed with its reason', async () => {
  const res = await p.api('workspaces', '/api/workspaces', {
    method: 'POST',
    as: 'wendy',
    json: { name: 'hooked-fails', template: 'minimal', repo: { url: 'http://127.0.0.1:1/none.git' } },
  });
  const { id } = (await res.json()) as any;
  const [failed] = await rx.waitFor('failed', (r) => r.path === '/hook/plain' && r.body?.event === 'workspace.failed' && r.body.workspace.id === id);
  expect(failed!.body.workspace).toMatchObject({ id, status: 'failed' });
  expect(failed!.body.workspace.reason).toContain('git clone failed');
  expect(eventsAt('plain', id).map((r) => r.body.event)).toEqual(['workspace.created', 'workspace.failed']);
  await verifyBoth(failed!);
  await p.api('workspaces', `/api/workspaces/${id}?volumes=true`, { method: 'DELETE', as: 'wendy' });
}, 60_000);
