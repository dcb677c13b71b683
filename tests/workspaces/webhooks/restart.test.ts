// Durability: Keel runs as its own process and is killed with SIGKILL while its receiver is down
// and deliveries are pending; after a restart over the same data dir every event arrives exactly
// once per delivery id, in order. An attempt cut short by the kill is recorded and sent again.
// On the PostgreSQL pass both runs keep their state in one PostgreSQL database.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';
import { sharedDatabase, TEST_SECRET } from '../../helpers/platform';
import { keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { closedPort, startReceiver, type Receiver } from './receiver';

const dataDir = mkdtempSync(join(tmpdir(), 'keel-webhooks-restart-'));
const env = { APP_DATA_DIR: dataDir, APP_WORKSPACE_PORT_RANGE: '24750-24799', APP_WEBHOOK_RETRY_SCHEDULE: ['0', ...Array(48).fill('300ms')].join(',') };
let keel: KeelProcess | undefined;
let rx: Receiver | undefined;
let database: Awaited<ReturnType<typeof sharedDatabase>> | undefined;

beforeAll(async () => {
  database = await sharedDatabase();
});
afterAll(async () => {
  await keel?.stop();
  await database?.drop();
  rx?.stop();
  try {
    removeInstanceObjects(keelInstance(dataDir));
  } catch {}
  rmSync(dataDir, { recursive: true, force: true });
});

const token = mintToken(TEST_SECRET, { sub: 'kim', ttlSeconds: 3600 });
function api(path: string, init: RequestInit & { json?: unknown } = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  if (init.json !== undefined) headers.set('content-type', 'application/json');
  return fetch(keel!.urls.workspaces + path, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
}
const status = async (id: string) => ((await (await api(`/api/workspaces/${id}`)).json()) as any).status;
const log = async (id: string) => ((await (await api(`/api/webhooks/${id}/deliveries`)).json()) as any).deliveries as any[];
const start = () => startKeel([BUN, 'src/main.ts'], { ...env, ...database!.env }, ['workspaces']);

async function killHard() {
  keel!.proc.kill('SIGKILL');
  await keel!.proc.exited;
  keel = undefined;
}

test('pending deliveries survive kill -9 and arrive once each, in order, when the receiver is back', async () => {
  const port = closedPort();
  keel = await start();
  const reg = (await (await api('/api/webhooks', { method: 'POST', json: { url: `http://127.0.0.1:${port}/hook/down`, events: ['*'], secret: 'restart-secret-0123456789' } })).json()) as any;
  const created = (await (await api('/api/workspaces', { method: 'POST', json: { name: 'survivor', template: 'minimal' } })).json()) as any;
  await waitFor('running', async () => (await status(created.id)) === 'running', 60_000);
  expect((await api(`/api/workspaces/${created.id}/stop`, { method: 'POST' })).status).toBe(200);
  await waitFor('stopped', async () => (await status(created.id)) === 'stopped', 60_000);
  // Three events, each tried at least once against the dead port and waiting for its next attempt.
  await waitFor('three pending, tried', async () => {
    const l = await log(reg.id);
    return l.length === 3 && l.every((d) => d.status === 'pending') && l[2].attempts >= 1;
  });
  const pendingIds = (await log(reg.id)).map((d) => d.id).reverse();

  await killHard();
  rx = startReceiver({ port });
  keel = await start();
  expect((await api(`/api/workspaces/${created.id}/start`, { method: 'POST' })).status).toBe(200);
  const got = await rx.waitFor('all four events', (r) => r.path === '/hook/down', 4, 60_000);
  await waitFor('all delivered', async () => (await log(reg.id)).every((d) => d.status === 'delivered'));
  // Nothing further arrives: one request per delivery id.
  const all = rx.received.filter((r) => r.path === '/hook/down');
  expect(all.map((r) => r.body.event)).toEqual(['workspace.created', 'workspace.started', 'workspace.stopped', 'workspace.started']);
  const ids = all.map((r) => r.headers['x-webhook-delivery']);
  expect(new Set(ids).size).toBe(4);
  expect(ids.slice(0, 3)).toEqual(pendingIds);
  expect(got.length).toBe(4);
  // The secret reached no log line of either process.
  expect(keel!.stderr() + keel!.stdout()).not.toContain('restart-secret-0123456789');
  await api(`/api/workspaces/${created.id}?volumes=true`, { method: 'DELETE' });
}, 180_000);

test('an attempt in flight when Keel is killed is recorded as interrupted and sent again with the same id', async () => {
  keel ??= await start();
  rx ??= startReceiver();
  let hung = 0;
  rx.answer = (r) => (r.path === '/hook/hang' && hung++ === 0 ? { status: 200, delayMs: 60_000 } : undefined);
  const reg = (await (await api('/api/webhooks', { method: 'POST', json: { url: `http://127.0.0.1:${rx.port}/hook/hang`, events: ['*'], secret: 'restart-secret-0123456789' } })).json()) as any;
  const ping = (await (await api(`/api/webhooks/${reg.id}/ping`, { method: 'POST' })).json()) as any;
  await rx.waitFor('the attempt that hangs', (r) => r.path === '/hook/hang');
  await killHard();
  keel = await start();
  const both = await rx.waitFor('the attempt after the restart', (r) => r.path === '/hook/hang', 2, 60_000);
  expect(both.map((r) => r.headers['x-webhook-delivery'])).toEqual([ping.id, ping.id]);
  await waitFor('delivered', async () => (await log(reg.id))[0].status === 'delivered');
  const detail = (await (await api(`/api/webhooks/${reg.id}/deliveries/${ping.id}`)).json()) as any;
  expect(detail.history.map((a: any) => [a.attempt, a.responseStatus])).toEqual([[1, null], [2, 204]]);
  expect(detail.history[0].error).toContain('interrupted');
  rx.answer = undefined;
}, 120_000);
