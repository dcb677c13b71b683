// How deliveries behave towards a real receiver on 127.0.0.1: retries until success, order per
// workspace, failure for good, 410, Retry-After, disabling after failing for a while, event
// filters and owners, and APP_WEBHOOK_DENY_PRIVATE. Events are published on the platform's bus the
// way the lifecycle publishes them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { waitFor } from '../../helpers/docker';
import { closeAndClean } from '../../helpers/workspaces';
import { startReceiver, type Receiver } from './receiver';

const SECRET = 'a-shared-secret-of-some-length';
let p: TestPlatform;
let strict: TestPlatform;
let rx: Receiver;

beforeAll(async () => {
  rx = startReceiver();
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_RETRY_SCHEDULE: '0,100ms,100ms,100ms', APP_WEBHOOK_DISABLE_AFTER: '1d' } });
  strict = await startTestPlatform({
    services: ['workspaces'],
    env: { APP_WEBHOOK_DENY_PRIVATE: 'true', APP_WEBHOOK_RETRY_SCHEDULE: '0,50ms', APP_WEBHOOK_DISABLE_AFTER: '1d' },
  });
});
afterAll(async () => {
  await closeAndClean(p);
  await closeAndClean(strict);
  rx.stop();
});

async function register(on: TestPlatform, as: string, body: Record<string, unknown> = {}) {
  const res = await on.api('workspaces', '/api/webhooks', { method: 'POST', as, json: { url: `${rx.url}/${as}`, events: ['*'], secret: SECRET, ...body } });
  expect(res.status).toBe(201);
  return (await res.json()) as any;
}
const log = async (on: TestPlatform, as: string, id: string) =>
  ((await (await on.api('workspaces', `/api/webhooks/${id}/deliveries`, { as })).json()) as any).deliveries as any[];
const webhook = async (on: TestPlatform, as: string, id: string) => (await (await on.api('workspaces', `/api/webhooks/${id}`, { as })).json()) as any;
const at = (as: string, r: { path: string }) => r.path === `/hook/${as}`;

/** Publishes a workspace event as the lifecycle does. */
function emit(on: TestPlatform, owner: string, workspaceId: string, event: string, status: string) {
  return on.bus.publish(`evt.workspace.${event}` as 'evt.workspace.created', {
    eventId: crypto.randomUUID(),
    event: `workspace.${event}`,
    timestamp: new Date().toISOString(),
    owner,
    workspace: { id: workspaceId, name: `n-${workspaceId}`, status },
  });
}

describe('retries and order', () => {
  test('a failing receiver is retried with the same delivery id until it answers 2xx', async () => {
    const w = await register(p, 'rita');
    let n = 0;
    rx.answer = (r) => (at('rita', r) && n++ < 3 ? { status: n === 1 ? 500 : 502 } : undefined);
    await emit(p, 'rita', 'ws_r1', 'started', 'running');
    const got = await rx.waitFor('4 attempts', (r) => at('rita', r), 4);
    rx.answer = undefined;
    expect(new Set(got.map((r) => r.headers['x-webhook-delivery'])).size).toBe(1);
    await waitFor('delivered', async () => (await log(p, 'rita', w.id))[0]?.status === 'delivered');
    expect((await log(p, 'rita', w.id))[0]).toMatchObject({ attempts: 4, responseStatus: 204, status: 'delivered' });
    expect((await webhook(p, 'rita', w.id)).failingSince).toBeNull();
  });

  test('a later event for a workspace waits until the earlier one is delivered', async () => {
    await register(p, 'omar');
    let first = true;
    rx.answer = (r) => (at('omar', r) && r.body.event === 'workspace.created' && first ? ((first = false), { status: 503 }) : undefined);
    await emit(p, 'omar', 'ws_o1', 'created', 'creating');
    await emit(p, 'omar', 'ws_o1', 'started', 'running');
    await emit(p, 'omar', 'ws_o1', 'stopped', 'stopped');
    const got = await rx.waitFor('3 events and a retry', (r) => at('omar', r), 4);
    rx.answer = undefined;
    expect(got.map((r) => r.body.event)).toEqual(['workspace.created', 'workspace.created', 'workspace.started', 'workspace.stopped']);
  });

  test('a burst of events of one workspace, handed over side by side and some twice, arrives once each in the order published', async () => {
    const w = await register(p, 'bess');
    const events = Array.from({ length: 20 }, (_, i) => ({
      eventId: `evt_bess_${i}`,
      event: 'workspace.started',
      timestamp: new Date().toISOString(),
      owner: 'bess',
      workspace: { id: 'ws_b1', name: `step-${i}`, status: 'running' },
    }));
    // All at once (the consumer gets them before any is written), the first ten again (at least once).
    await Promise.all([...events, ...events.slice(0, 10)].map((e) => p.bus.publish('evt.workspace.started', e)));
    const got = await rx.waitFor('twenty events', (r) => at('bess', r), 20);
    expect(got.map((r) => r.body.workspace.name)).toEqual(events.map((e) => e.workspace.name));
    await waitFor('all delivered', async () => (await log(p, 'bess', w.id)).every((d) => d.status === 'delivered'));
    expect(await log(p, 'bess', w.id)).toHaveLength(20);
    expect(rx.received.filter((r) => at('bess', r))).toHaveLength(20);
  });

  test('an event of a workspace written while the attempt of the one before it ends still goes out, in order', async () => {
    const w = await register(p, 'tess');
    const names = Array.from({ length: 100 }, (_, i) => `step-${i}`);
    const publish = (i: number) =>
      p.bus.publish('evt.workspace.started', { eventId: `evt_tess_${i}`, event: 'workspace.started', timestamp: new Date().toISOString(), owner: 'tess', workspace: { id: 'ws_t1', name: names[i]!, status: 'running' } });
    // Each event is published as the previous one reaches the receiver: it is written while that
    // attempt's outcome is recorded (whose end makes the next pending one of the workspace its head).
    let next = 1;
    rx.answer = (r) => {
      if (at('tess', r) && next < names.length) void publish(next++);
      return undefined;
    };
    await publish(0);
    const got = await rx.waitFor('every event', (r) => at('tess', r), names.length, 30_000);
    rx.answer = undefined;
    expect(got.map((r) => r.body.workspace.name)).toEqual(names);
    await waitFor('all delivered', async () => (await log(p, 'tess', w.id)).every((d) => d.status === 'delivered'));
  }, 60_000);

  test('events of different workspaces do not wait for each other', async () => {
    await register(p, 'olga');
    rx.answer = (r) => (at('olga', r) && r.body.workspace.id === 'ws_slow' ? { status: 500 } : undefined);
    await emit(p, 'olga', 'ws_slow', 'created', 'creating');
    await emit(p, 'olga', 'ws_fast', 'created', 'creating');
    await rx.waitFor('the other workspace', (r) => at('olga', r) && r.body.workspace.id === 'ws_fast');
    rx.answer = undefined;
  });

  test('a delivery whose schedule is spent fails for good, and the next event of its workspace goes out', async () => {
    const w = await register(p, 'paul');
    rx.answer = (r) => (at('paul', r) && r.body.event === 'workspace.created' ? { status: 500 } : undefined);
    await emit(p, 'paul', 'ws_p1', 'created', 'creating');
    await emit(p, 'paul', 'ws_p1', 'started', 'running');
    await rx.waitFor('the later event', (r) => at('paul', r) && r.body.event === 'workspace.started');
    rx.answer = undefined;
    const entries = await log(p, 'paul', w.id);
    const created = entries.find((d) => d.event === 'workspace.created');
    expect(created).toMatchObject({ status: 'failed', attempts: 4, responseStatus: 500, error: 'HTTP 500' });
    expect(rx.received.filter((r) => at('paul', r) && r.body.event === 'workspace.created')).toHaveLength(4);
  });

  test('a failed delivery redelivered goes out at once with its id and does not hold back later events', async () => {
    const w = await register(p, 'vera');
    rx.answer = (r) => (at('vera', r) && r.body.event === 'workspace.created' ? { status: 500 } : undefined);
    await emit(p, 'vera', 'ws_v1', 'created', 'creating');
    await waitFor('failed for good', async () => (await log(p, 'vera', w.id))[0]?.status === 'failed');
    const failed = (await log(p, 'vera', w.id))[0];
    // The later event of the workspace is held by its receiver (503, Retry-After: 5) while the redelivery goes out.
    let held = 0;
    rx.answer = (r) => (at('vera', r) && r.body.event === 'workspace.started' && held++ === 0 ? { status: 503, headers: { 'retry-after': '5' } } : undefined);
    await emit(p, 'vera', 'ws_v1', 'started', 'running');
    await rx.waitFor('the started event is held', (r) => at('vera', r) && r.body.event === 'workspace.started');
    const res = await p.api('workspaces', `/api/webhooks/${w.id}/deliveries/${failed.id}/redeliver`, { method: 'POST', as: 'vera' });
    expect(res.status).toBe(202);
    expect(((await res.json()) as any).status).toBe('pending');
    rx.answer = undefined;
    const again = await rx.waitFor('the redelivery', (r) => at('vera', r) && r.body.event === 'workspace.created', 5);
    expect(new Set(again.map((r) => r.headers['x-webhook-delivery']))).toEqual(new Set([failed.id]));
    const order = rx.received.filter((r) => at('vera', r)).map((r) => r.body.event);
    expect(order.slice(-2)).toEqual(['workspace.started', 'workspace.created']);
    await waitFor('both delivered', async () => (await log(p, 'vera', w.id)).every((d) => d.status === 'delivered'), 30_000);
    expect((await log(p, 'vera', w.id)).find((d) => d.id === failed.id).attempts).toBe(5);
  });

  test('Retry-After on 429 and 503 delays the next attempt', async () => {
    const w = await register(p, 'quinn');
    let n = 0;
    rx.answer = (r) => (at('quinn', r) && n++ === 0 ? { status: 429, headers: { 'retry-after': '1' } } : undefined);
    await emit(p, 'quinn', 'ws_q1', 'started', 'running');
    await waitFor('the retry is scheduled', async () => (await log(p, 'quinn', w.id))[0]?.responseStatus === 429);
    const waiting = (await log(p, 'quinn', w.id))[0];
    expect(Date.parse(waiting.nextAttemptAt) - Date.parse(waiting.lastAttemptAt)).toBeGreaterThanOrEqual(1000);
    const got = await rx.waitFor('the retry', (r) => at('quinn', r), 2);
    rx.answer = undefined;
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(900);
  });
});

describe('receivers that go away', () => {
  test('410 disables the webhook visibly, ends its pending deliveries and tells its owner\'s other webhooks', async () => {
    const w = await register(p, 'gone');
    const watcher = await register(p, 'gone', { url: `${rx.url}/gone-watcher`, events: ['webhook.disabled', 'workspace.stopped'] });
    rx.answer = (r) => (at('gone', r) ? { status: 410 } : undefined);
    await emit(p, 'gone', 'ws_g1', 'started', 'running');
    await waitFor('disabled', async () => (await webhook(p, 'gone', w.id)).active === false);
    rx.answer = undefined;
    const view = await webhook(p, 'gone', w.id);
    expect(view).toMatchObject({ active: false, disabledReason: 'gone' });
    expect(Date.parse(view.disabledAt)).toBeGreaterThan(0);
    const listed = ((await (await p.api('workspaces', '/api/webhooks', { as: 'gone' })).json()) as any).webhooks.find((x: any) => x.id === w.id);
    expect(listed).toMatchObject({ active: false, disabledReason: 'gone' });
    expect((await log(p, 'gone', w.id))[0]).toMatchObject({ status: 'failed', responseStatus: 410 });
    const [note] = await rx.waitFor('webhook.disabled', (r) => r.path === '/hook/gone-watcher');
    expect(note!.body).toMatchObject({ event: 'webhook.disabled', webhook: { id: w.id, reason: 'gone' } });
    expect(watcher.id).not.toBe(w.id);
    const before = rx.received.filter((r) => at('gone', r)).length;
    await emit(p, 'gone', 'ws_g1', 'stopped', 'stopped');
    await rx.waitFor('the watcher is still served', (r) => r.path === '/hook/gone-watcher' && r.body.event === 'workspace.stopped');
    expect(rx.received.filter((r) => at('gone', r)).length).toBe(before);
    expect((await log(p, 'gone', w.id)).map((d) => d.event)).toEqual(['workspace.started']);
  });

  test('a webhook whose deliveries fail for longer than APP_WEBHOOK_DISABLE_AFTER is disabled', async () => {
    const quick = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_RETRY_SCHEDULE: Array(40).fill('50ms').join(','), APP_WEBHOOK_DISABLE_AFTER: '400ms' } });
    try {
      const w = await register(quick, 'flaky');
      rx.answer = (r) => (at('flaky', r) ? { status: 500 } : undefined);
      await emit(quick, 'flaky', 'ws_f1', 'started', 'running');
      await waitFor('disabled', async () => (await webhook(quick, 'flaky', w.id)).active === false, 20_000);
      rx.answer = undefined;
      const view = await webhook(quick, 'flaky', w.id);
      expect(view).toMatchObject({ active: false, disabledReason: 'failing' });
      expect(Date.parse(view.disabledAt) - Date.parse(view.failingSince)).toBeGreaterThanOrEqual(400);
      expect((await log(quick, 'flaky', w.id))[0].status).toBe('failed');
      // Turned back on, it receives again.
      await quick.api('workspaces', `/api/webhooks/${w.id}`, { method: 'PATCH', as: 'flaky', json: { active: true } });
      await emit(quick, 'flaky', 'ws_f1', 'stopped', 'stopped');
      await rx.waitFor('after re-enabling', (r) => at('flaky', r) && r.body.event === 'workspace.stopped');
      expect((await webhook(quick, 'flaky', w.id)).failingSince).toBeNull();
    } finally {
      await closeAndClean(quick);
    }
  });
});

describe('who receives what', () => {
  test("a webhook receives only its events and only its owner's workspaces (admins': all)", async () => {
    await register(p, 'sara', { events: ['workspace.stopped'] });
    await register(p, 'admin', { url: `${rx.url}/root` });
    await emit(p, 'sara', 'ws_s1', 'started', 'running');
    await emit(p, 'tom', 'ws_t1', 'stopped', 'stopped');
    await emit(p, 'sara', 'ws_s1', 'stopped', 'stopped');
    const got = await rx.waitFor('the stop', (r) => at('sara', r));
    expect(got.map((r) => [r.body.event, r.body.workspace.id])).toEqual([['workspace.stopped', 'ws_s1']]);
    const root = await rx.waitFor('all three at the admin', (r) => r.path === '/hook/root' && r.body.event?.startsWith('workspace.'), 3);
    expect(root.map((r) => r.body.workspace.id).sort()).toEqual(['ws_s1', 'ws_s1', 'ws_t1']);
  });
});

describe('APP_WEBHOOK_DENY_PRIVATE=true', () => {
  test('a loopback literal is refused at registration', async () => {
    const res = await strict.api('workspaces', '/api/webhooks', { method: 'POST', json: { url: rx.url, events: ['*'], secret: SECRET } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain('loopback');
  });

  test('a name that resolves to loopback is refused at delivery and never reached', async () => {
    const w = await register(strict, 'una', { url: `http://localhost:${rx.port}/hook/una` });
    await strict.api('workspaces', `/api/webhooks/${w.id}/ping`, { method: 'POST', as: 'una' });
    await waitFor('failed', async () => (await log(strict, 'una', w.id))[0]?.status === 'failed');
    const [d] = await log(strict, 'una', w.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 2, responseStatus: null });
    expect(d.error).toContain('target address refused');
    expect(rx.received.filter((r) => at('una', r))).toHaveLength(0);
  });
});
