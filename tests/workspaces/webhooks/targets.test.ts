// Webhooks and clones never reach another tenant (CONTRACT.md, "One tenant never stalls another"):
// an address inside APP_WORKSPACE_SUBNET_POOL, or of any Keel-managed container on the engine
// (another Keel's, on another pool, included), is refused like a metadata address: a literal at
// registration or create with 400, a name that resolves there when delivering, recorded as a failed
// attempt. Through HTTP, against real workspaces on the test engine.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { inspect, waitFor } from '../../helpers/docker';
import { closeAndClean, createRunning } from '../../helpers/workspaces';
import { startReceiver, type Receiver } from './receiver';

const SECRET = 'a-shared-secret-of-some-length';
let p: TestPlatform;
let other: TestPlatform;
let bobWs: any;
let carlWs: any;

const containerIp = (ws: any) => inspect('container', ws.containerId).NetworkSettings.Networks[`keel-${ws.id}`].IPAddress as string;
const registerAt = (on: TestPlatform, as: string, url: string) => on.api('workspaces', '/api/webhooks', { method: 'POST', as, json: { url, events: ['*'], secret: SECRET } });
const createWithRepo = (on: TestPlatform, as: string, url: string) =>
  on.api('workspaces', '/api/workspaces', { method: 'POST', as, json: { name: `repo-${as}`, template: 'minimal', repo: { url } } });
const errorOf = async (res: Response) => ((await res.json()) as any).error;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '27100-27149' } });
  // Another Keel on the same engine, with a pool of its own: its containers are outside p's pool.
  other = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '27150-27199', APP_WORKSPACE_SUBNET_POOL: '10.221.0.0/16' } });
  [bobWs, carlWs] = await Promise.all([createRunning(p, 'target-bob', { as: 'bob', timeoutMs: 120_000 }), createRunning(other, 'target-carl', { as: 'carl', timeoutMs: 120_000 })]);
}, 180_000);
afterAll(async () => {
  await closeAndClean(p);
  await closeAndClean(other);
});

describe('literals', () => {
  test('a webhook to an address inside the subnet pool is refused with 400, and not stored', async () => {
    const res = await registerAt(p, 'alice', 'http://10.213.7.9:8080/hook');
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error).toMatchObject({ code: 'INVALID_REQUEST', details: { property: '/url' } });
    expect(error.message).not.toContain('10.213.7.9');
    expect(((await (await p.api('workspaces', '/api/webhooks', { as: 'alice' })).json()) as any).webhooks).toHaveLength(0);
  });

  test("a webhook to another tenant's running container is refused with 400", async () => {
    const res = await registerAt(p, 'alice', `http://${containerIp(bobWs)}:${8080}/`);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('INVALID_REQUEST');
  });

  test("a webhook to a container of another Keel on the engine, outside this pool, is refused with 400", async () => {
    const ip = containerIp(carlWs);
    expect(ip.startsWith('10.221.')).toBe(true);
    // The list of container addresses is read from the engine every few seconds.
    await waitFor('refused', async () => (await registerAt(p, 'alice', `http://${ip}/`)).status === 400, 15_000, 500);
  });

  test('PATCH to such an address is refused too', async () => {
    const made = await registerAt(p, 'dana', 'http://127.0.0.1:9/hook');
    expect(made.status).toBe(201);
    const { id } = (await made.json()) as any;
    const res = await p.api('workspaces', `/api/webhooks/${id}`, { method: 'PATCH', as: 'dana', json: { url: `http://${containerIp(bobWs)}/` } });
    expect(res.status).toBe(400);
  });

  test("a repo.url at another tenant's container is refused with 400 and nothing is created", async () => {
    const res = await createWithRepo(p, 'alice', `http://${containerIp(bobWs)}/repo.git`);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: 'INVALID_REQUEST', details: { property: '/repo/url' } });
    expect(((await (await p.api('workspaces', '/api/workspaces', { as: 'alice' })).json()) as any).workspaces).toHaveLength(0);
  });

  test("a webhook or a repo.url at Keel's own API port is refused with 400", async () => {
    const port = new URL(p.url('workspaces')).port;
    for (const host of ['127.0.0.1', '0.0.0.0', '[::1]']) {
      expect((await registerAt(p, 'alice', `http://${host}:${port}/api/workspaces`)).status).toBe(400);
    }
    expect((await createWithRepo(p, 'alice', `http://127.0.0.1:${port}/repo.git`)).status).toBe(400);
  });

  test('a repo.url inside the subnet pool is refused with 400', async () => {
    const res = await createWithRepo(p, 'alice', 'http://10.213.200.3/repo.git');
    expect(res.status).toBe(400);
  });
});

describe('names', () => {
  let rx: Receiver;
  let loop: TestPlatform;
  beforeAll(async () => {
    rx = startReceiver();
    // A pool over loopback makes `localhost` a name that resolves inside it: a real name, resolved by
    // the system, landing in the denied range (no workspace is made on this platform).
    loop = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_SUBNET_POOL: '127.0.0.0/8', APP_WEBHOOK_RETRY_SCHEDULE: '0,50ms' } });
  });
  afterAll(async () => {
    await closeAndClean(loop);
    rx.stop();
  });

  test('a webhook whose name resolves into the pool is accepted, then refused at delivery with failed attempts, and never reached', async () => {
    expect((await registerAt(loop, 'erin', `http://127.0.0.1:${rx.port}/hook/erin`)).status).toBe(400);
    const made = await registerAt(loop, 'erin', `http://localhost:${rx.port}/hook/erin`);
    expect(made.status).toBe(201);
    const { id } = (await made.json()) as any;
    expect((await loop.api('workspaces', `/api/webhooks/${id}/ping`, { method: 'POST', as: 'erin' })).status).toBe(202);
    const log = async () => ((await (await loop.api('workspaces', `/api/webhooks/${id}/deliveries`, { as: 'erin' })).json()) as any).deliveries as any[];
    await waitFor('failed', async () => (await log())[0]?.status === 'failed');
    const [d] = await log();
    expect(d).toMatchObject({ status: 'failed', attempts: 2, responseStatus: null });
    expect(d.error).toContain('target address refused');
    const detail = (await (await loop.api('workspaces', `/api/webhooks/${id}/deliveries/${d.id}`, { as: 'erin' })).json()) as any;
    expect(detail.history).toHaveLength(2);
    expect(detail.history[0]).toMatchObject({ responseStatus: null, responseBody: null });
    expect(rx.received.filter((r) => r.path === '/hook/erin')).toHaveLength(0);
  });

  test("a name resolving to this host is refused at delivery on Keel's own port", async () => {
    const port = new URL(p.url('workspaces')).port;
    const made = await registerAt(p, 'fred', `http://localhost:${port}/api/workspaces`);
    expect(made.status).toBe(201);
    const { id } = (await made.json()) as any;
    expect((await p.api('workspaces', `/api/webhooks/${id}/ping`, { method: 'POST', as: 'fred' })).status).toBe(202);
    const log = async () => ((await (await p.api('workspaces', `/api/webhooks/${id}/deliveries`, { as: 'fred' })).json()) as any).deliveries as any[];
    await waitFor('refused', async () => (await log())[0]?.attempts >= 1);
    const [d] = await log();
    expect(d).toMatchObject({ responseStatus: null });
    expect(d.error).toContain('target address refused');
  });
});
