// The read path of GET /api/workspaces with its serialised-response cache, over HTTP on a real
// platform and engine: another actor never gets a cached answer (admins see all), every lifecycle
// change is on the next read, ETag/304, the rate limit with its headers and 429 on cached answers,
// and the answers still satisfy the WorkspaceList schema that is no longer checked at run time.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { WorkspaceList } from '../../src/services/workspaces/lifecycle/lifecycle.model';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { docker } from '../helpers/docker';
import { closeAndClean, createRunning, waitStatus } from '../helpers/workspaces';

const LIMIT = 400;
let p: TestPlatform;
let aliceWs: any;
let bobWs: any;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_RATE_LIMIT_AUTHENTICATED: String(LIMIT) } });
  [aliceWs, bobWs] = await Promise.all([createRunning(p, 'rp-alice', { as: 'alice' }), createRunning(p, 'rp-bob', { as: 'bob' })]);
}, 120_000);
afterAll(() => closeAndClean(p));

const list = (as: string, init: { query?: string; headers?: Record<string, string> } = {}) =>
  p.api('workspaces', `/api/workspaces${init.query ?? ''}`, { as, headers: init.headers });
const idsOf = async (res: Response) => ((await res.json()) as { workspaces: { id: string }[] }).workspaces.map((w) => w.id);
const statusIn = async (as: string, id: string) =>
  ((await (await list(as)).json()) as { workspaces: { id: string; status: string }[] }).workspaces.find((w) => w.id === id)?.status;

describe('ownership of cached answers', () => {
  test('each actor reads only their own list, however often and in whatever order; admins read all', async () => {
    for (let round = 0; round < 3; round++) {
      expect(await idsOf(await list('alice'))).toEqual([aliceWs.id]);
      expect(await idsOf(await list('bob'))).toEqual([bobWs.id]);
      expect(await idsOf(await list('carol'))).toEqual([]);
      expect(await idsOf(await list('admin'))).toEqual(expect.arrayContaining([aliceWs.id, bobWs.id]));
    }
  });

  test("an actor sending another actor's ETag gets their own list, not a 304", async () => {
    const etag = (await list('alice')).headers.get('etag')!;
    const res = await list('bob', { headers: { 'if-none-match': etag } });
    expect(res.status).toBe(200);
    expect(await idsOf(res)).toEqual([bobWs.id]);
  });

  test('filters are part of the key: status and type give their own answers', async () => {
    expect(await idsOf(await list('alice', { query: '?status=running' }))).toEqual([aliceWs.id]);
    expect(await idsOf(await list('alice', { query: '?status=stopped' }))).toEqual([]);
    expect(await idsOf(await list('alice', { query: '?type=temporary' }))).toEqual([]);
    expect(await idsOf(await list('alice', { query: '?status=running&type=persistent' }))).toEqual([aliceWs.id]);
    expect((await list('alice', { query: '?status=bogus' })).status).toBe(400);
  });

  test('a repeated list is answered before routing only for the exact query it validated; anything else takes the normal way', async () => {
    const right = await idsOf(await list('alice', { query: '?status=running' }));
    expect(await idsOf(await list('alice', { query: '?status=running' }))).toEqual(right); // the early answer
    for (const query of ['?status=running&status=bogus', '?status=bogus', '?type=none']) {
      for (let i = 0; i < 2; i++) {
        const res = await list('alice', { query });
        expect(res.status).toBe(400);
        const body = (await res.json()) as any;
        expect(body.error.code).toBe('INVALID_REQUEST');
        expect(JSON.stringify(body)).not.toContain('bogus');
      }
    }
    // The same target asked by another actor after alice's early answers: their own list.
    expect(await idsOf(await list('bob', { query: '?status=running' }))).toEqual([bobWs.id]);
    expect(await idsOf(await list('bob', { query: '?status=running' }))).toEqual([bobWs.id]);
    const long = await list('alice', { query: '?status=running', headers: { 'if-none-match': `"${'x'.repeat(5000)}"` } });
    expect(long.status).toBe(400);
    expect(((await long.json()) as any).error.code).toBe('INVALID_REQUEST');
  });

  test('answers satisfy the WorkspaceList schema exactly (it is the contract, no longer checked per answer)', async () => {
    const check = TypeCompiler.Compile(WorkspaceList);
    for (const as of ['alice', 'admin']) {
      const body = await (await list(as)).json();
      expect([...check.Errors(body)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
    }
  });
});

describe('a change is on the next read', () => {
  test('stop, start, create and delete each change the list and its ETag at once', async () => {
    const first = await list('alice');
    let etag = first.headers.get('etag')!;
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    expect(first.headers.get('vary')).toBe('Authorization');
    expect((await list('alice', { headers: { 'if-none-match': etag } })).status).toBe(304);

    const changed = async () => {
      const res = await list('alice', { headers: { 'if-none-match': etag } });
      expect(res.status).toBe(200);
      etag = res.headers.get('etag')!;
      return res;
    };

    const stop = (await (await p.api('workspaces', `/api/workspaces/${aliceWs.id}/stop`, { method: 'POST', as: 'alice' })).json()) as any;
    expect(stop.status).toBe('stopping');
    await changed();
    expect(['stopping', 'stopped']).toContain((await statusIn('alice', aliceWs.id))!);
    await waitStatus(p, aliceWs.id, 'stopped');
    expect(await statusIn('alice', aliceWs.id)).toBe('stopped');
    await changed();

    const start = (await (await p.api('workspaces', `/api/workspaces/${aliceWs.id}/start`, { method: 'POST', as: 'alice' })).json()) as any;
    expect(start.status).toBe('starting');
    expect(['starting', 'running']).toContain((await statusIn('alice', aliceWs.id))!);
    await waitStatus(p, aliceWs.id, 'running');
    expect(await statusIn('alice', aliceWs.id)).toBe('running');
    await changed();

    const created = await p.api('workspaces', '/api/workspaces', { method: 'POST', as: 'alice', json: { name: 'rp-alice-2', template: 'minimal', type: 'temporary' } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect(await idsOf(await changed())).toEqual([aliceWs.id, id]);
    expect(await idsOf(await list('bob'))).toEqual([bobWs.id]);

    const del = await p.api('workspaces', `/api/workspaces/${id}?volumes=true`, { method: 'DELETE', as: 'alice' });
    expect(del.status).toBe(200);
    expect(await idsOf(await changed())).toEqual([aliceWs.id]);
    expect(await idsOf(await list('admin'))).not.toContain(id);
  }, 120_000);
});

describe('a status the engine reports', () => {
  test("a container killed behind Keel's back is stopped in the next list, which was cached as running", async () => {
    expect(await statusIn('bob', bobWs.id)).toBe('running');
    expect(await statusIn('bob', bobWs.id)).toBe('running'); // now from the cache
    expect(docker('kill', bobWs.containerId).code).toBe(0);
    await waitStatus(p, bobWs.id, 'stopped', { as: 'bob', timeoutMs: 15_000 }); // GET /{id}: never cached
    expect(await statusIn('bob', bobWs.id)).toBe('stopped');
    expect(await statusIn('admin', bobWs.id)).toBe('stopped');
  }, 30_000);
});

describe('rate limits on cached answers', () => {
  test('every answer, 200 or 304, carries the headers and counts; past the limit 429 with Retry-After', async () => {
    const first = await list('dora');
    const etag = first.headers.get('etag')!;
    let remaining = Number(first.headers.get('x-ratelimit-remaining'));
    expect(first.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
    while (remaining > 0) {
      const res = await list('dora', { headers: remaining % 2 ? { 'if-none-match': etag } : {} });
      expect(res.status).toBe(remaining % 2 ? 304 : 200);
      expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
      expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
      remaining--;
      await res.arrayBuffer();
    }
    for (const headers of [{}, { 'if-none-match': etag }] as Record<string, string>[]) {
      const res = await list('dora', { headers });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(((await res.json()) as any).error.code).toBe('RATE_LIMITED');
    }
    // Another actor's budget is their own.
    expect((await list('alice')).status).toBe(200);
  });

  test('an expired token is refused even after the same actor was answered from the cache', async () => {
    expect((await list('erin')).status).toBe(200);
    const expired = p.token('erin', { ttlSeconds: -120 });
    const res = await fetch(p.url('workspaces') + '/api/workspaces', { headers: { authorization: `Bearer ${expired}` } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe('UNAUTHORIZED');
  });
});

describe('OpenAPI', () => {
  test('GET /api/workspaces documents If-None-Match, the ETag and 304', async () => {
    const doc = (await (await fetch(p.url('workspaces') + '/openapi.json')).json()) as any;
    const op = doc.paths['/api/workspaces'].get;
    expect(op.parameters.map((x: any) => `${x.in}:${x.name}`)).toEqual(expect.arrayContaining(['header:if-none-match', 'query:status', 'query:type']));
    expect(op.responses['304']).toBeDefined();
    expect(op.responses['200'].headers.ETag).toBeDefined();
    expect(op.responses['200'].content['application/json']).toBeDefined();
  });
});
