// The webhook API through HTTP: registrations (validation, ownership, never the secret), ping, the
// delivery log, redelivery, and OpenAPI. Workspace events come from the platform's bus, as the
// lifecycle publishes them (webhooks.events.test.ts drives real workspaces).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { sharedDatabase, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { waitFor } from '../../helpers/docker';
import { closeAndClean } from '../../helpers/workspaces';
import { startReceiver, type Receiver } from './receiver';

const SECRET = 'a-shared-secret-of-some-length';
let p: TestPlatform;
let rx: Receiver;

beforeAll(async () => {
  rx = startReceiver();
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_RETRY_SCHEDULE: '0,100ms,100ms,100ms' } });
});
afterAll(async () => {
  await closeAndClean(p);
  rx.stop();
});

const api = (path: string, init: RequestInit & { as?: string; json?: unknown } = {}) => p.api('workspaces', path, init);
async function register(as: string, body: Record<string, unknown> = {}) {
  const res = await api('/api/webhooks', { method: 'POST', as, json: { url: `${rx.url}/${as}`, events: ['*'], secret: SECRET, ...body } });
  expect(res.status).toBe(201);
  return (await res.json()) as any;
}
const deliveries = async (as: string, id: string) => ((await (await api(`/api/webhooks/${id}/deliveries`, { as })).json()) as any).deliveries as any[];
const forActor = (as: string) => rx.received.filter((r) => r.path === `/hook/${as}`);

describe('registrations', () => {
  test('create answers 201 with id, url, events, active and createdAt, and never the secret', async () => {
    const res = await api('/api/webhooks', { method: 'POST', as: 'carol', json: { url: rx.url, events: ['workspace.started'], secret: SECRET } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ url: rx.url, events: ['workspace.started'], active: true, disabledReason: null });
    expect(body.id).toMatch(/^wh_/);
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);
    expect(res.headers.get('location')).toBe(`/api/webhooks/${body.id}`);
    expect(JSON.stringify(body)).not.toContain(SECRET);
    for (const path of [`/api/webhooks/${body.id}`, '/api/webhooks']) {
      const text = await (await api(path, { as: 'carol' })).text();
      expect(text).toContain(body.id);
      expect(text).not.toContain(SECRET);
    }
  });

  test('"*" stands for every event and duplicates collapse', async () => {
    expect((await register('dora', { events: ['workspace.started', '*'] })).events).toEqual(['*']);
    expect((await register('dora', { events: ['workspace.started', 'workspace.started'] })).events).toEqual(['workspace.started']);
  });

  test('an unknown event name answers 400 naming its position, not its value', async () => {
    const res = await api('/api/webhooks', { method: 'POST', json: { url: rx.url, events: ['workspace.started', 'workspace.explodedXYZ'], secret: SECRET } });
    expect(res.status).toBe(400);
    const b = (await res.json()) as any;
    expect(b.error.code).toBe('INVALID_REQUEST');
    expect(b.error.details.property).toBe('/events/1');
    expect(b.error.details.known).toContain('workspace.failed');
    expect(JSON.stringify(b)).not.toContain('explodedXYZ');
  });

  test('a missing or malformed field answers 400 INVALID_REQUEST', async () => {
    const bad: [unknown, string][] = [
      [{ events: ['*'], secret: SECRET }, '/url'],
      [{ url: rx.url, secret: SECRET }, '/events'],
      [{ url: rx.url, events: [], secret: SECRET }, '/events'],
      [{ url: rx.url, events: ['*'] }, '/secret'],
      [{ url: rx.url, events: ['*'], secret: 'short' }, '/secret'],
      [{ url: rx.url, events: ['*'], secret: 'whsec_!!!not-base64-at-all!!!' }, '/secret'],
      [{ url: 'ftp://example.com/hook', events: ['*'], secret: SECRET }, '/url'],
      [{ url: 'not a url', events: ['*'], secret: SECRET }, '/url'],
    ];
    for (const [json, property] of bad) {
      const res = await api('/api/webhooks', { method: 'POST', json });
      expect(res.status).toBe(400);
      const b = (await res.json()) as any;
      expect(b.error.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(b.error.details)).toContain(property);
    }
    const res = await api('/api/webhooks', { method: 'POST', body: '{"url":', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
  });

  test('link-local and metadata IP literals are refused at registration in any spelling', async () => {
    for (const url of ['http://169.254.169.254/latest', 'http://0xa9fea9fe/', 'http://2852039166/', 'http://0251.0376.0251.0376/', 'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]/', 'http://100.100.100.200/', 'http://[fd00:ec2::254]/']) {
      const res = await api('/api/webhooks', { method: 'POST', json: { url, events: ['*'], secret: SECRET } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.details.property).toBe('/url');
    }
    // Loopback is allowed by default: self-hosted receivers live there.
    expect((await api('/api/webhooks', { method: 'POST', as: 'erin', json: { url: 'http://127.0.0.1:1/x', events: ['*'], secret: SECRET } })).status).toBe(201);
  });

  test("another actor's webhook answers 404 on every route, and lists show only one's own (admins: all)", async () => {
    const w = await register('frank');
    const calls: [string, string, unknown?][] = [
      ['GET', `/api/webhooks/${w.id}`],
      ['PATCH', `/api/webhooks/${w.id}`, { active: false }],
      ['DELETE', `/api/webhooks/${w.id}`],
      ['POST', `/api/webhooks/${w.id}/ping`],
      ['GET', `/api/webhooks/${w.id}/deliveries`],
    ];
    for (const [method, path, json] of calls) {
      const res = await api(path, { method, as: 'mallory', json });
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.code).toBe('WEBHOOK_NOT_FOUND');
    }
    const ping = (await (await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'frank' })).json()) as any;
    const redeliver = await api(`/api/webhooks/${w.id}/deliveries/${ping.id}/redeliver`, { method: 'POST', as: 'mallory' });
    expect(redeliver.status).toBe(404);
    const detail = await api(`/api/webhooks/${w.id}/deliveries/${ping.id}`, { as: 'mallory' });
    expect(detail.status).toBe(404);
    const mine = ((await (await api('/api/webhooks', { as: 'mallory' })).json()) as any).webhooks;
    expect(mine.map((x: any) => x.id)).not.toContain(w.id);
    const all = ((await (await api('/api/webhooks', { as: 'admin' })).json()) as any).webhooks;
    expect(all.map((x: any) => x.id)).toContain(w.id);
    expect((await api(`/api/webhooks/${w.id}`, { as: 'frank' })).status).toBe(200);
  });

  test('PATCH changes url, events and secret; the new secret signs from then on', async () => {
    const w = await register('gina', { events: ['workspace.started'] });
    const newSecret = 'the-rotated-secret-value';
    const res = await api(`/api/webhooks/${w.id}`, { method: 'PATCH', as: 'gina', json: { url: `${rx.url}/gina2`, events: ['workspace.stopped'], secret: newSecret } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ url: `${rx.url}/gina2`, events: ['workspace.stopped'] });
    expect(JSON.stringify(body)).not.toContain(newSecret);
    await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'gina' });
    const [got] = await rx.waitFor('ping at the new url', (r) => r.path === '/hook/gina2');
    expect(await verifyGithub(newSecret, got!.raw, got!.headers['x-webhook-signature']!)).toBe(true);
    expect(await verifyGithub(SECRET, got!.raw, got!.headers['x-webhook-signature']!)).toBe(false);
    const bad = await api(`/api/webhooks/${w.id}`, { method: 'PATCH', as: 'gina', json: { events: ['nope'] } });
    expect(bad.status).toBe(400);
    const refused = await api(`/api/webhooks/${w.id}`, { method: 'PATCH', as: 'gina', json: { url: 'http://169.254.169.254/' } });
    expect(refused.status).toBe(400);
  });

  test('an actor may have 20 webhooks; the 21st answers 429 QUOTA_EXCEEDED and is not stored', async () => {
    for (let i = 0; i < 20; i++) await register('many', { url: `${rx.url}/many/${i}` });
    const res = await api('/api/webhooks', { method: 'POST', as: 'many', json: { url: rx.url, events: ['*'], secret: SECRET } });
    expect(res.status).toBe(429);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'webhooks', limit: 20 } });
    expect(((await (await api('/api/webhooks', { as: 'many' })).json()) as any).webhooks).toHaveLength(20);
    expect((await api('/api/webhooks', { method: 'POST', as: 'not-many', json: { url: rx.url, events: ['*'], secret: SECRET } })).status).toBe(201);
  });

  test('creates sent side by side stop at the quota too', async () => {
    const answers = await Promise.all(
      Array.from({ length: 26 }, (_, i) => api('/api/webhooks', { method: 'POST', as: 'rush', json: { url: `${rx.url}/rush/${i}`, events: ['*'], secret: SECRET } })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(20).fill(201), ...Array(6).fill(429)]);
    expect(((await (await api('/api/webhooks', { as: 'rush' })).json()) as any).webhooks).toHaveLength(20);
  });

  test('a deleted webhook frees its place under the quota', async () => {
    const made = [];
    for (let i = 0; i < 20; i++) made.push(await register('full', { url: `${rx.url}/full/${i}` }));
    expect((await api('/api/webhooks', { method: 'POST', as: 'full', json: { url: rx.url, events: ['*'], secret: SECRET } })).status).toBe(429);
    expect((await api(`/api/webhooks/${made[0].id}`, { method: 'DELETE', as: 'full' })).status).toBe(200);
    expect((await api('/api/webhooks', { method: 'POST', as: 'full', json: { url: rx.url, events: ['*'], secret: SECRET } })).status).toBe(201);
  });

  test('admin tokens are exempt from the webhook quota', async () => {
    const admin = p.token('root-many', { role: 'admin' });
    for (let i = 0; i < 21; i++) {
      const res = await api('/api/webhooks', { method: 'POST', headers: { authorization: `Bearer ${admin}` }, json: { url: `${rx.url}/root-many/${i}`, events: ['workspace.failed'], secret: SECRET } });
      expect(res.status).toBe(201);
    }
  });

  test('DELETE removes the webhook with its log', async () => {
    const w = await register('hank');
    const res = await api(`/api/webhooks/${w.id}`, { method: 'DELETE', as: 'hank' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: w.id, deleted: true });
    expect((await api(`/api/webhooks/${w.id}`, { as: 'hank' })).status).toBe(404);
    expect((await api(`/api/webhooks/${w.id}/deliveries`, { as: 'hank' })).status).toBe(404);
  });
});

describe('ping, log and redelivery', () => {
  test('ping answers 202 and delivers a signed ping event', async () => {
    const w = await register('ivan');
    const res = await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'ivan' });
    expect(res.status).toBe(202);
    const d = (await res.json()) as any;
    expect(d).toMatchObject({ event: 'ping', status: 'pending' });
    const [got] = await rx.waitFor('ping', (r) => r.path === '/hook/ivan');
    expect(got!.headers['x-webhook-event']).toBe('ping');
    expect(got!.headers['x-webhook-delivery']).toBe(d.id);
    expect(got!.headers['webhook-id']).toBe(d.id);
    expect(got!.body).toMatchObject({ event: 'ping', webhook: { id: w.id, events: ['*'] } });
    expect(await verifyGithub(SECRET, got!.raw, got!.headers['x-webhook-signature']!)).toBe(true);
  });

  test('the log lists deliveries newest first with status, attempts, response status and timing', async () => {
    const w = await register('judy');
    const queued: string[] = [];
    for (let i = 0; i < 3; i++) queued.push(((await (await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'judy' })).json()) as any).id);
    await waitFor('3 delivered', async () => (await deliveries('judy', w.id)).filter((d) => d.status === 'delivered').length === 3);
    const log = await deliveries('judy', w.id);
    expect(log.map((d) => d.id)).toEqual([...queued].reverse());
    // Pings are outside any order, so they may arrive in any order; each arrives once.
    expect(forActor('judy').map((r) => r.headers['x-webhook-delivery']).sort()).toEqual([...queued].sort());
    for (const d of log) {
      expect(d).toMatchObject({ event: 'ping', status: 'delivered', attempts: 1, responseStatus: 204, error: null, nextAttemptAt: null });
      expect(typeof d.durationMs).toBe('number');
      expect(Date.parse(d.lastAttemptAt)).toBeGreaterThanOrEqual(Date.parse(d.createdAt));
      expect(Date.parse(d.deliveredAt)).toBeGreaterThanOrEqual(Date.parse(d.lastAttemptAt));
    }
    const page = ((await (await api(`/api/webhooks/${w.id}/deliveries?limit=1&before=${log[0].id}`, { as: 'judy' })).json()) as any).deliveries;
    expect(page.map((d: any) => d.id)).toEqual([log[1].id]);
    const bad = await api(`/api/webhooks/${w.id}/deliveries?limit=0`, { as: 'judy' });
    expect(bad.status).toBe(400);
  });

  test('a delivery shows its payload and every attempt', async () => {
    const w = await register('kate');
    let n = 0;
    rx.answer = (r) => (r.path === '/hook/kate' && n++ < 2 ? { status: 500, body: 'try later' } : undefined);
    const d = (await (await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'kate' })).json()) as any;
    await waitFor('delivered', async () => (await deliveries('kate', w.id))[0].status === 'delivered');
    rx.answer = undefined;
    const detail = (await (await api(`/api/webhooks/${w.id}/deliveries/${d.id}`, { as: 'kate' })).json()) as any;
    expect(detail).toMatchObject({ id: d.id, status: 'delivered', attempts: 3, responseStatus: 204, payload: { event: 'ping' } });
    expect(detail.history.map((a: any) => [a.attempt, a.responseStatus])).toEqual([[1, 500], [2, 500], [3, 204]]);
    expect(detail.history[0].responseBody).toBe('try later');
    expect(detail.history[0].error).toBeNull();
    const ids = new Set(forActor('kate').map((r) => r.headers['x-webhook-delivery']));
    expect([...ids]).toEqual([d.id]);
    expect((await api(`/api/webhooks/${w.id}/deliveries/msg_nothing`, { as: 'kate' })).status).toBe(404);
  });

  test('redeliver answers 202 and sends the delivery again with the same id', async () => {
    const w = await register('liam');
    const d = (await (await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'liam' })).json()) as any;
    await rx.waitFor('first', (r) => r.path === '/hook/liam');
    await waitFor('delivered', async () => (await deliveries('liam', w.id))[0].status === 'delivered');
    const res = await api(`/api/webhooks/${w.id}/deliveries/${d.id}/redeliver`, { method: 'POST', as: 'liam' });
    expect(res.status).toBe(202);
    expect(((await res.json()) as any).id).toBe(d.id);
    const both = await rx.waitFor('second', (r) => r.path === '/hook/liam', 2);
    expect(both.map((r) => r.headers['x-webhook-delivery'])).toEqual([d.id, d.id]);
    expect(both[1]!.raw).toBe(both[0]!.raw);
    await waitFor('delivered again', async () => (await deliveries('liam', w.id))[0].attempts === 2);
    const missing = await api(`/api/webhooks/${w.id}/deliveries/msg_missing/redeliver`, { method: 'POST', as: 'liam' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('DELIVERY_NOT_FOUND');
  });

  test('redeliver while an attempt is in flight answers 409 DELIVERY_IN_FLIGHT', async () => {
    const w = await register('nina');
    rx.answer = (r) => (r.path === '/hook/nina' ? { status: 204, delayMs: 1500 } : undefined);
    const d = (await (await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'nina' })).json()) as any;
    await rx.waitFor('the slow attempt', (r) => r.path === '/hook/nina');
    const res = await api(`/api/webhooks/${w.id}/deliveries/${d.id}/redeliver`, { method: 'POST', as: 'nina' });
    rx.answer = undefined;
    expect(res.status).toBe(409);
    expect(((await res.json()) as any).error.code).toBe('DELIVERY_IN_FLIGHT');
    await waitFor('delivered', async () => (await deliveries('nina', w.id))[0].status === 'delivered');
  });

  test('a webhook turned off gets nothing, answers ping with 409, and is visible as off', async () => {
    const w = await register('mona');
    const off = (await (await api(`/api/webhooks/${w.id}`, { method: 'PATCH', as: 'mona', json: { active: false } })).json()) as any;
    expect(off).toMatchObject({ active: false, disabledReason: 'manual' });
    const ping = await api(`/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'mona' });
    expect(ping.status).toBe(409);
    expect(((await ping.json()) as any).error.code).toBe('WEBHOOK_INACTIVE');
    const on = (await (await api(`/api/webhooks/${w.id}`, { method: 'PATCH', as: 'mona', json: { active: true } })).json()) as any;
    expect(on).toMatchObject({ active: true, disabledReason: null });
  });
});

describe('retention', () => {
  test('ended deliveries older than APP_WEBHOOK_RETENTION leave the log; the webhook stays', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-webhooks-retention-'));
    const database = await sharedDatabase(); // the same database after the restart (PostgreSQL pass)
    const first = await startTestPlatform({ services: ['workspaces'], dataDir, env: database.env });
    let second: TestPlatform | undefined;
    try {
      const w = (await (await first.api('workspaces', '/api/webhooks', { method: 'POST', as: 'rhea', json: { url: `${rx.url}/rhea`, events: ['*'], secret: SECRET } })).json()) as any;
      await first.api('workspaces', `/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'rhea' });
      const entries = async (on: TestPlatform) => ((await (await on.api('workspaces', `/api/webhooks/${w.id}/deliveries`, { as: 'rhea' })).json()) as any).deliveries as any[];
      await waitFor('delivered', async () => (await entries(first))[0]?.status === 'delivered');
      await first.close();
      second = await startTestPlatform({ services: ['workspaces'], dataDir, env: { ...database.env, APP_WEBHOOK_RETENTION: '1ms' } });
      await waitFor('pruned', async () => (await entries(second!)).length === 0);
      expect((await second.api('workspaces', `/api/webhooks/${w.id}`, { as: 'rhea' })).status).toBe(200);
    } finally {
      await closeAndClean(second);
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('OpenAPI', () => {
  test('every webhook route is described with its error responses', async () => {
    const doc = (await (await fetch(p.url('workspaces') + '/openapi.json')).json()) as any;
    const expectOp = (path: string, method: string, statuses: string[]) => {
      const op = doc.paths[path]?.[method];
      expect(op).toBeDefined();
      for (const s of statuses) expect(Object.keys(op.responses)).toContain(s);
    };
    expectOp('/api/webhooks', 'post', ['201', '400', '401', '429']);
    expectOp('/api/webhooks', 'get', ['200', '401']);
    expectOp('/api/webhooks/{id}', 'get', ['200', '404']);
    expectOp('/api/webhooks/{id}', 'patch', ['200', '400', '404']);
    expectOp('/api/webhooks/{id}', 'delete', ['200', '404']);
    expectOp('/api/webhooks/{id}/ping', 'post', ['202', '404', '409', '429']);
    expectOp('/api/webhooks/{id}/deliveries', 'get', ['200', '400', '404']);
    expectOp('/api/webhooks/{id}/deliveries/{deliveryId}', 'get', ['200', '404']);
    expectOp('/api/webhooks/{id}/deliveries/{deliveryId}/redeliver', 'post', ['202', '404', '409']);
  });
});
