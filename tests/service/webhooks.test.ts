// Webhooks on a temp SQLite file, the memory bus and engine, through app.handle: registration,
// the per-actor quota, the delivery log, redelivery and retries to a local receiver, in a few
// seconds. The same behaviours against the real engine and on PostgreSQL: tests/workspaces/webhooks.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { startServiceApp, type ServiceApp } from '../helpers/service-app';
import { waitFor } from '../helpers/wait';
import { startReceiver, type Receiver } from '../workspaces/webhooks/receiver';

const SECRET = 'a-shared-secret-of-some-length';
let s: ServiceApp;
let rx: Receiver;

beforeAll(async () => {
  rx = startReceiver();
  s = await startServiceApp('workspaces', { env: { APP_WEBHOOK_RETRY_SCHEDULE: '0,100ms,100ms,100ms' } });
});
afterAll(async () => {
  await s.close();
  rx.stop();
});

const create = (as: string, body: Record<string, unknown> = {}) =>
  s.api('/api/webhooks', { method: 'POST', as, json: { url: `${rx.url}/${as}`, events: ['*'], secret: SECRET, ...body } });
async function register(as: string, body: Record<string, unknown> = {}) {
  const res = await create(as, body);
  expect(res.status).toBe(201);
  return (await res.json()) as any;
}
const deliveries = async (as: string, id: string) => ((await (await s.api(`/api/webhooks/${id}/deliveries`, { as })).json()) as any).deliveries as any[];
const ping = async (as: string, id: string) => (await (await s.api(`/api/webhooks/${id}/ping`, { method: 'POST', as })).json()) as any;

describe('registrations', () => {
  test('create answers 201 with the webhook and a Location, and never the secret', async () => {
    const res = await create('carol', { events: ['workspace.started'] });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ url: `${rx.url}/carol`, events: ['workspace.started'], active: true, disabledReason: null });
    expect(res.headers.get('location')).toBe(`/api/webhooks/${body.id}`);
    for (const path of [`/api/webhooks/${body.id}`, '/api/webhooks']) expect(await (await s.api(path, { as: 'carol' })).text()).not.toContain(SECRET);
  });

  test('an unknown event name answers 400 INVALID_REQUEST without echoing it', async () => {
    const res = await create('dora', { events: ['workspace.started', 'workspace.explodedXYZ'] });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text).error.code).toBe('INVALID_REQUEST');
    expect(text).not.toContain('explodedXYZ');
  });

  test('metadata and link-local addresses are refused at registration', async () => {
    const res = await create('erin', { url: 'http://169.254.169.254/latest' });
    expect(res.status).toBe(400);
  });

  test("another actor's webhook answers 404 and lists hold only one's own", async () => {
    const w = await register('fred');
    expect((await s.api(`/api/webhooks/${w.id}`, { as: 'gina' })).status).toBe(404);
    expect((await s.api(`/api/webhooks/${w.id}`, { method: 'DELETE', as: 'gina' })).status).toBe(404);
    expect(((await (await s.api('/api/webhooks', { as: 'gina' })).json()) as any).webhooks).toEqual([]);
  });

  test('DELETE answers {id, deleted: true} and the webhook and its log are gone', async () => {
    const w = await register('hank');
    const res = await s.api(`/api/webhooks/${w.id}`, { method: 'DELETE', as: 'hank' });
    expect(await res.json()).toEqual({ id: w.id, deleted: true });
    expect((await s.api(`/api/webhooks/${w.id}/deliveries`, { as: 'hank' })).status).toBe(404);
  });
});

describe('the webhook quota', () => {
  test('an actor may have 20 webhooks; the 21st answers 429 QUOTA_EXCEEDED and is not stored', async () => {
    for (let i = 0; i < 20; i++) await register('many', { url: `${rx.url}/many/${i}` });
    const res = await create('many');
    expect(res.status).toBe(429);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'webhooks', limit: 20 } });
    expect(((await (await s.api('/api/webhooks', { as: 'many' })).json()) as any).webhooks).toHaveLength(20);
    expect((await create('not-many')).status).toBe(201);
  });

  test('creates sent side by side stop at the quota too', async () => {
    const answers = await Promise.all(Array.from({ length: 26 }, (_, i) => create('rush', { url: `${rx.url}/rush/${i}` })));
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(20).fill(201), ...Array(6).fill(429)]);
    expect(((await (await s.api('/api/webhooks', { as: 'rush' })).json()) as any).webhooks).toHaveLength(20);
  });

  test('a deleted webhook frees its place; admins are exempt', async () => {
    const made = [];
    for (let i = 0; i < 20; i++) made.push(await register('full', { url: `${rx.url}/full/${i}` }));
    expect((await create('full')).status).toBe(429);
    expect((await s.api(`/api/webhooks/${made[0].id}`, { method: 'DELETE', as: 'full' })).status).toBe(200);
    expect((await create('full')).status).toBe(201);
    for (let i = 0; i < 21; i++) expect((await create('admin', { url: `${rx.url}/admin/${i}` })).status).toBe(201);
  });
});

describe('deliveries', () => {
  test('ping answers 202 and delivers a signed ping event', async () => {
    const w = await register('ivan');
    const d = await ping('ivan', w.id);
    expect(d).toMatchObject({ event: 'ping', status: 'pending' });
    const [got] = await rx.waitFor('ping', (r) => r.path === '/hook/ivan', 1, 5_000);
    expect(got!.headers['x-webhook-delivery']).toBe(d.id);
    expect(got!.body).toMatchObject({ event: 'ping', webhook: { id: w.id } });
    expect(await verifyGithub(SECRET, got!.raw, got!.headers['x-webhook-signature']!)).toBe(true);
  });

  test('a failing receiver is retried with the same delivery id and the log shows every attempt', async () => {
    const w = await register('kate');
    let n = 0;
    rx.answer = (r) => (r.path === '/hook/kate' && n++ < 2 ? { status: 500, body: 'try later' } : undefined);
    const d = await ping('kate', w.id);
    await waitFor('delivered', async () => (await deliveries('kate', w.id))[0].status === 'delivered', 5_000, 20);
    rx.answer = undefined;
    const detail = (await (await s.api(`/api/webhooks/${w.id}/deliveries/${d.id}`, { as: 'kate' })).json()) as any;
    expect(detail).toMatchObject({ id: d.id, status: 'delivered', attempts: 3, responseStatus: 204, payload: { event: 'ping' } });
    expect(detail.history.map((a: any) => [a.attempt, a.responseStatus])).toEqual([[1, 500], [2, 500], [3, 204]]);
    expect(new Set(rx.received.filter((r) => r.path === '/hook/kate').map((r) => r.headers['x-webhook-delivery']))).toEqual(new Set([d.id]));
  });

  test('the log lists deliveries newest first and pages with before', async () => {
    const w = await register('judy');
    const queued: string[] = [];
    for (let i = 0; i < 3; i++) queued.push((await ping('judy', w.id)).id);
    await waitFor('3 delivered', async () => (await deliveries('judy', w.id)).filter((d) => d.status === 'delivered').length === 3, 5_000, 20);
    const log = await deliveries('judy', w.id);
    expect(log.map((d) => d.id)).toEqual([...queued].reverse());
    const page = ((await (await s.api(`/api/webhooks/${w.id}/deliveries?limit=1&before=${log[0].id}`, { as: 'judy' })).json()) as any).deliveries;
    expect(page.map((d: any) => d.id)).toEqual([log[1].id]);
    expect((await s.api(`/api/webhooks/${w.id}/deliveries?limit=0`, { as: 'judy' })).status).toBe(400);
  });

  test('redeliver answers 202 and sends the same delivery again; an unknown one is 404 DELIVERY_NOT_FOUND', async () => {
    const w = await register('liam');
    const d = await ping('liam', w.id);
    await waitFor('delivered', async () => (await deliveries('liam', w.id))[0].status === 'delivered', 5_000, 20);
    const res = await s.api(`/api/webhooks/${w.id}/deliveries/${d.id}/redeliver`, { method: 'POST', as: 'liam' });
    expect(res.status).toBe(202);
    const both = await rx.waitFor('second', (r) => r.path === '/hook/liam', 2, 5_000);
    expect(both.map((r) => r.headers['x-webhook-delivery'])).toEqual([d.id, d.id]);
    const missing = await s.api(`/api/webhooks/${w.id}/deliveries/msg_missing/redeliver`, { method: 'POST', as: 'liam' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('DELIVERY_NOT_FOUND');
  });

  test('a workspace created on the memory engine sends workspace.created and workspace.started to its owner', async () => {
    const w = await register('mona', { events: ['workspace.created', 'workspace.started'] });
    const res = await s.api('/api/workspaces', { method: 'POST', as: 'mona', json: { name: 'hooked', template: 'minimal' } });
    expect(res.status).toBe(201);
    const ws = (await res.json()) as any;
    const got = await rx.waitFor('both events', (r) => r.path === '/hook/mona', 2, 5_000);
    expect(got.map((r) => [r.body.event, r.body.workspace.id])).toEqual([['workspace.created', ws.id], ['workspace.started', ws.id]]);
    await waitFor('both delivered', async () => (await deliveries('mona', w.id)).filter((d) => d.status === 'delivered').length === 2, 5_000, 20);
  });
});
