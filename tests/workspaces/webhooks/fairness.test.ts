// One registration never stalls another (CONTRACT.md, "One tenant never stalls another"): a flooded,
// slow receiver holds at most APP_WEBHOOK_HOOK_CONCURRENCY attempts while other registrations are
// served at once; ping stops at APP_WEBHOOK_MAX_PENDING pending deliveries while workspace events
// still queue; the delivery log is pruned by age and by count per registration. Through HTTP, with
// a real receiver on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { waitFor } from '../../helpers/docker';
import { closeAndClean } from '../../helpers/workspaces';
import { closedPort, startReceiver, type Receiver } from './receiver';

const SECRET = 'a-shared-secret-of-some-length';
let rx: Receiver;

beforeAll(() => {
  rx = startReceiver();
});
afterAll(() => rx.stop());

async function register(on: TestPlatform, as: string, url = `${rx.url}/${as}`) {
  const res = await on.api('workspaces', '/api/webhooks', { method: 'POST', as, json: { url, events: ['*'], secret: SECRET } });
  expect(res.status).toBe(201);
  return (await res.json()) as any;
}
const ping = (on: TestPlatform, as: string, id: string) => on.api('workspaces', `/api/webhooks/${id}/ping`, { method: 'POST', as });
const log = async (on: TestPlatform, as: string, id: string) =>
  ((await (await on.api('workspaces', `/api/webhooks/${id}/deliveries?limit=200`, { as })).json()) as any).deliveries as any[];

describe('a flooded slow receiver', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['workspaces'] });
  });
  afterAll(() => closeAndClean(p));

  test("does not delay another actor's delivery, and holds at most two attempts in flight", async () => {
    const flood = await register(p, 'flood');
    // Every request to the flooded hook takes 5 s to answer: the slots it holds stay held.
    rx.answer = (r) => (r.path === '/hook/flood' ? { status: 204, delayMs: 5_000 } : undefined);
    for (let i = 0; i < 300; i += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, () => ping(p, 'flood', flood.id)));
      expect(batch.every((r) => r.status === 202)).toBe(true);
    }
    await rx.waitFor('the flood has begun', (r) => r.path === '/hook/flood');

    const calm = await register(p, 'calm');
    const sent = Date.now();
    expect((await ping(p, 'calm', calm.id)).status).toBe(202);
    const [got] = await rx.waitFor('the calm ping', (r) => r.path === '/hook/calm', 1, 10_000);
    expect(got!.at - sent).toBeLessThan(10_000);
    expect(rx.peakOpen('/hook/flood')).toBeLessThanOrEqual(2);
    rx.answer = undefined;
  }, 60_000);
});

describe('turns', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    // One attempt at a time over all webhooks: the order the receiver sees is the order of the turns.
    p = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_CONCURRENCY: '1' } });
  });
  afterAll(() => closeAndClean(p));

  test('webhooks with deliveries queued take turns, one delivery each, whoever queued first', async () => {
    const first = await register(p, 'turn-a');
    const second = await register(p, 'turn-b');
    // Hold the dispatcher on a slow answer while both queues fill, the first webhook's entirely before the second's.
    let held = false;
    rx.answer = (r) => (r.path === '/hook/turn-a' && !held ? ((held = true), { status: 204, delayMs: 1_000 }) : undefined);
    for (let i = 0; i < 6; i++) expect((await ping(p, 'turn-a', first.id)).status).toBe(202);
    for (let i = 0; i < 5; i++) expect((await ping(p, 'turn-b', second.id)).status).toBe(202);
    const got = await rx.waitFor('all eleven', (r) => r.path === '/hook/turn-a' || r.path === '/hook/turn-b', 11);
    rx.answer = undefined;
    expect(got.map((r) => r.path.slice(-1)).join('')).toBe('abababababa');
  });
});

describe('APP_WEBHOOK_MAX_PENDING', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_MAX_PENDING: '5', APP_WEBHOOK_RETRY_SCHEDULE: '0,1h' } });
  });
  afterAll(() => closeAndClean(p));

  test('ping past the pending limit answers 429 QUOTA_EXCEEDED, and workspace events still queue', async () => {
    // The receiver is down: every delivery fails once and waits an hour, pending.
    const down = await register(p, 'piper', `http://127.0.0.1:${closedPort()}/hook`);
    for (let i = 0; i < 5; i++) expect((await ping(p, 'piper', down.id)).status).toBe(202);
    const refused = await ping(p, 'piper', down.id);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'pendingDeliveries', limit: 5 } });
    expect(await log(p, 'piper', down.id)).toHaveLength(5);

    await p.bus.publish('evt.workspace.created', { eventId: 'evt_pip1', event: 'workspace.created', timestamp: new Date().toISOString(), owner: 'piper', workspace: { id: 'ws_pip1', name: 'pip', status: 'creating' } });
    await waitFor('the workspace event queued', async () => (await log(p, 'piper', down.id)).length === 6);
    expect((await log(p, 'piper', down.id))[0]).toMatchObject({ event: 'workspace.created', status: 'pending' });
  });

  test('pings sent side by side stop at the limit too', async () => {
    const down = await register(p, 'rush', `http://127.0.0.1:${closedPort()}/hook`);
    const answers = await Promise.all(Array.from({ length: 12 }, () => ping(p, 'rush', down.id)));
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(5).fill(202), ...Array(7).fill(429)]);
    expect(await log(p, 'rush', down.id)).toHaveLength(5);
  });

  test("another registration's pings are not limited by a full one", async () => {
    const down = await register(p, 'quill', `http://127.0.0.1:${closedPort()}/hook`);
    for (let i = 0; i < 5; i++) await ping(p, 'quill', down.id);
    expect((await ping(p, 'quill', down.id)).status).toBe(429);
    const up = await register(p, 'quill');
    expect((await ping(p, 'quill', up.id)).status).toBe(202);
    await rx.waitFor('the other ping', (r) => r.path === '/hook/quill');
  });
});

describe('pruning the delivery log', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['workspaces'], env: { APP_WEBHOOK_RETENTION_COUNT: '3', APP_WEBHOOK_RETENTION: '2s', APP_WEBHOOK_PRUNE_INTERVAL: '200ms', APP_WEBHOOK_RETRY_SCHEDULE: '0,1h' } });
  });
  afterAll(() => closeAndClean(p));

  test('only the newest APP_WEBHOOK_RETENTION_COUNT ended deliveries of a registration are kept, with their attempts', async () => {
    const w = await register(p, 'rhea');
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(((await (await ping(p, 'rhea', w.id)).json()) as any).id);
      await rx.waitFor('delivered', (r) => r.path === '/hook/rhea', i + 1);
    }
    await waitFor('pruned to three', async () => (await log(p, 'rhea', w.id)).length === 3);
    expect((await log(p, 'rhea', w.id)).map((d) => d.id)).toEqual(ids.slice(3).reverse());
    expect((await p.api('workspaces', `/api/webhooks/${w.id}/deliveries/${ids[0]}`, { as: 'rhea' })).status).toBe(404);
  });

  test('ended deliveries older than APP_WEBHOOK_RETENTION go, and pending ones stay however old', async () => {
    const up = await register(p, 'saul');
    const down = await register(p, 'saul', `http://127.0.0.1:${closedPort()}/hook`);
    expect((await ping(p, 'saul', up.id)).status).toBe(202);
    expect((await ping(p, 'saul', down.id)).status).toBe(202);
    await waitFor('delivered', async () => (await log(p, 'saul', up.id))[0]?.status === 'delivered');
    await waitFor('the delivered one pruned', async () => (await log(p, 'saul', up.id)).length === 0, 10_000);
    await Bun.sleep(500);
    expect(await log(p, 'saul', down.id)).toMatchObject([{ status: 'pending', attempts: 1 }]);
  });
});
