// Nothing said is lost: five services on five processes over a NATS server with JetStream. A
// workspace event survives kill -9 of the workspaces process right after its 201, and a NATS outage
// with a kill in the middle (the event waits in the outbox written with the workspace row); an event
// the bus delivers twice makes one webhook delivery and one source binding; and a raw NATS client
// sees qry.sources.resolve answer the bare contract object, and fail with the NATS service headers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { mintToken } from '../../src/platform/auth/workspace-token';
import { keelInstance, removeInstanceObjects, waitFor } from '../helpers/docker';
import { startTestNats, type TestNats } from '../helpers/nats';
import { requireTestEnv, TEST_SECRET } from '../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../helpers/process';
import { startReceiver, type Receiver } from '../workspaces/webhooks/receiver';

requireTestEnv('DOCKER_HOST');
let nats: TestNats;
let raw: NatsConnection;
let rx: Receiver;
let hookId = '';
const procs = new Map<string, KeelProcess>();
const dirs: Record<string, string> = {};
const token = mintToken(TEST_SECRET, { sub: 'dora', ttlSeconds: 3600 });
const enc = new TextEncoder();
const dec = new TextDecoder();

const start = async (service: string) => {
  dirs[service] ??= mkdtempSync(join(tmpdir(), `keel-durable-${service}-`));
  const p = await startKeel([BUN, 'src/main.ts'], { APP_BUS: nats.url, APP_DATA_DIR: dirs[service]!, APP_QUIET_TOKEN: '1', APP_WORKSPACE_PORT_RANGE: '24650-24699' }, [service]);
  procs.set(service, p);
  return p;
};
async function killHard(service: string) {
  const p = procs.get(service)!;
  p.proc.kill('SIGKILL');
  await p.proc.exited;
  procs.delete(service);
}
function api(path: string, init: RequestInit & { json?: unknown } = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  if (init.json !== undefined) headers.set('content-type', 'application/json');
  return fetch(procs.get('workspaces')!.urls.workspaces + path, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
}
function query<T>(service: string, sql: string, ...params: string[]): T[] {
  const db = new Database(join(dirs[service]!, 'keel.db'), { readonly: true });
  try {
    return db.query(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}
const deliveries = async () => ((await (await api(`/api/webhooks/${hookId}/deliveries`)).json()) as { deliveries: { event: string }[] }).deliveries;
/** Publishes straight to JetStream, each time as a new message (its own message id): the stream does not drop it, only the consumer can. */
/**
 * Publishes as another process would. Right after a test restarted the server, JetStream may take a
 * few seconds to answer again: a publish that timed out is tried again (a copy stored twice is what
 * the consumers' once-per-event-id must absorb anyway).
 */
async function publishRaw(subject: string, payload: unknown) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await jetstream(raw).publish(subject, enc.encode(JSON.stringify(payload)), { msgID: crypto.randomUUID() });
    } catch (e) {
      if (attempt >= 4 || (e as Error).name !== 'TimeoutError') throw e;
    }
  }
}

beforeAll(async () => {
  nats = await startTestNats();
  rx = startReceiver();
  await Promise.all(['identity', 'catalog', 'sources', 'workers', 'workspaces'].map(start));
  const reg = await api('/api/webhooks', { method: 'POST', json: { url: `${rx.url}/hook`, events: ['*'], secret: 'durable-secret-0123456789' } });
  expect(reg.status).toBe(201);
  hookId = ((await reg.json()) as { id: string }).id;
  raw = await connect({ servers: `127.0.0.1:${nats.port}`, user: nats.user, pass: nats.pass });
}, 120_000);

afterAll(async () => {
  await raw?.close();
  await Promise.all([...procs.values()].map((p) => p.stop().catch(() => {})));
  rx?.stop();
  try {
    if (dirs.workspaces) await removeInstanceObjects(keelInstance(dirs.workspaces));
  } catch {}
  await nats?.close();
  for (const d of Object.values(dirs)) rmSync(d, { recursive: true, force: true });
});

describe('workspace events on NATS survive a crash', () => {
  test('kill -9 right after the 201: workspace.created is still delivered to the webhook after the restart', async () => {
    const res = await api('/api/workspaces', { method: 'POST', json: { name: 'said-once', template: 'minimal' } });
    expect(res.status).toBe(201);
    await killHard('workspaces');
    const { id } = (await res.json()) as { id: string };
    await start('workspaces');
    // Taken from JetStream again by the new process: at once if the relay had not sent it, after the
    // consumer's ack wait (10 s) and one more second if the killed process held it unacknowledged.
    const got = await rx.waitFor('workspace.created of said-once', (r) => r.body?.event === 'workspace.created' && r.body?.workspace?.id === id, 1, 60_000);
    expect(got[0]!.body.workspace).toMatchObject({ id, name: 'said-once' });
    // At least once on the bus, once to the receiver: one delivery of the event.
    await Bun.sleep(500);
    expect(rx.of('workspace.created', id)).toHaveLength(1);
  }, 90_000);

  test('NATS down while a workspace is created, the process killed meanwhile: the event waits in the outbox and is delivered when both are back', async () => {
    await nats.stop();
    let down = true;
    try {
      const res = await api('/api/workspaces', { method: 'POST', json: { name: 'said-in-outage', template: 'minimal' } });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      // Written with the workspace row, in the same database, and not sent: nothing took it.
      const rows = query<{ subject: string; sent_at: number | null; payload: string }>('workspaces', 'select subject, sent_at, payload from workspaces_event_outbox where payload like ?', `%${id}%`);
      expect(rows.map((r) => [r.subject, r.sent_at])).toContainEqual(['evt.workspace.created', null]);
      expect(JSON.parse(rows[0]!.payload).eventId).toMatch(/^evt_/);
      await killHard('workspaces');
      await nats.restart();
      down = false;
      await start('workspaces');
      await rx.waitFor('workspace.created of said-in-outage', (r) => r.body?.event === 'workspace.created' && r.body?.workspace?.id === id, 1, 30_000);
      await waitFor('the outbox row marked sent', () => query<{ n: number }>('workspaces', 'select count(*) as n from workspaces_event_outbox where sent_at is null and payload like ?', `%${id}%`)[0]!.n === 0, 10_000);
    } finally {
      // The tests after this one need the server and the process back, whatever failed here.
      if (down) await nats.restart();
      if (!procs.has('workspaces')) await start('workspaces');
    }
  }, 90_000);
});

describe('consumers act once per event id', () => {
  test('the same workspace event delivered twice by the bus makes one webhook delivery', async () => {
    const before = (await deliveries()).length;
    const event = { eventId: `evt_dup_${crypto.randomUUID()}`, event: 'workspace.stopped', timestamp: new Date().toISOString(), owner: 'dora', workspace: { id: 'ws_dup_target', name: 'dup', status: 'stopped' } };
    await publishRaw('evt.workspace.stopped', event);
    await publishRaw('evt.workspace.stopped', event);
    // A later event on the same consumer: once it is a delivery, both copies before it were handled.
    const after = { ...event, eventId: `evt_after_${crypto.randomUUID()}`, event: 'workspace.deleted', workspace: { ...event.workspace, id: 'ws_dup_after' } };
    await publishRaw('evt.workspace.deleted', after);
    await waitFor('the later event to become a delivery', async () => (await deliveries()).some((d) => d.event === 'workspace.deleted'), 20_000);
    const now = await deliveries();
    expect(now.length - before).toBe(2);
    expect(now.filter((d) => d.event === 'workspace.stopped')).toHaveLength(1);
  });

  test('the same assetIndexed delivered twice by the bus leaves one binding', async () => {
    const assetId = `ast_dup_${crypto.randomUUID().slice(0, 8)}`;
    const event = {
      eventId: `evt_dup_${crypto.randomUUID()}`, assetId, editionId: 'ed_x', workId: null, root: 0, path: 'Dup/clip.mp4', identification: 'unidentified', indexed: true,
      indexVersion: 1, replaced: false, container: 'mp4', durationMs: 1000, fastHash: 'h', capabilities: [], at: Date.now(),
    };
    await publishRaw('evt.catalog.assetIndexed', event);
    await publishRaw('evt.catalog.assetIndexed', event);
    await waitFor('the binding', async () => {
      const m = await raw.request('qry.sources.resolve', enc.encode(JSON.stringify({ assetId })), { timeout: 2000 });
      return JSON.parse(dec.decode(m.data)).available === true;
    });
    await Bun.sleep(300);
    expect(query<{ n: number }>('sources', 'select count(*) as n from sources_bindings where asset_id = ?', assetId)[0]!.n).toBe(1);
  });
});

describe('bus replies seen by a raw NATS client', () => {
  test('qry.sources.resolve answers the bare contract object, with no envelope', async () => {
    const m = await raw.request('qry.sources.resolve', enc.encode(JSON.stringify({ assetId: 'ast_nowhere' })), { timeout: 5000 });
    expect(m.headers?.get('Nats-Service-Error-Code') ?? '').toBe('');
    expect(JSON.parse(dec.decode(m.data))).toEqual({ assetId: 'ast_nowhere', available: false, binding: null });
  });

  test('a refused qry.sources.resolve answers with the Nats-Service-Error headers', async () => {
    const m = await raw.request('qry.sources.resolve', enc.encode(JSON.stringify({ assetId: '' })), { timeout: 5000 });
    expect(m.headers?.get('Nats-Service-Error-Code')).toBe('422');
    expect(m.headers?.get('Nats-Service-Error')).toContain('assetId');
    expect(JSON.parse(dec.decode(m.data))).toMatchObject({ code: 'SOURCES_REQUEST_INVALID', status: 422 });
  });
});
