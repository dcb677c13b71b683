// The workspace API's edges over HTTP: public probes and OpenAPI, tokens, input validation with the
// envelope error model, and rate limits with a low configured limit.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, errorCode } from '../helpers/workspaces';
import { dereferencedDocument } from '../helpers/openapi';

let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
});
afterAll(() => closeAndClean(p));

const base = () => p.url('workspaces');
const post = (body: unknown, headers: Record<string, string> = {}) =>
  p.api('workspaces', '/api/workspaces', { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });

describe('public routes', () => {
  test('health and version answer without a token', async () => {
    const h = await fetch(base() + '/health');
    expect(h.status).toBe(200);
    expect(await h.json()).toMatchObject({ status: 'ok' });
    const v = await fetch(base() + '/version');
    expect((await v.json()).component).toBe('workspaces');
  });

  test('/openapi.json is public OpenAPI 3.0 describing every route with its errors', async () => {
    const doc = await dereferencedDocument(base());
    expect(doc.openapi).toMatch(/^3\.0\./);
    const ops: Record<string, string[]> = {
      '/api/workspaces': ['get', 'post'],
      '/api/workspaces/{id}': ['get', 'delete'],
      '/api/workspaces/{id}/start': ['post'],
      '/api/workspaces/{id}/stop': ['post'],
      '/api/workspaces/{id}/restart': ['post'],
    };
    for (const [path, methods] of Object.entries(ops)) {
      for (const m of methods) {
        const op = doc.paths[path]?.[m];
        expect(op).toBeDefined();
        expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '401', '429']));
        if (path !== '/api/workspaces') expect(Object.keys(op.responses)).toContain('404');
      }
    }
    const create = doc.paths['/api/workspaces'].post;
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '409']));
    expect(JSON.stringify(create.requestBody)).toContain('"pattern"');
    for (const path of ['/api/workspaces/{id}/start', '/api/workspaces/{id}/stop', '/api/workspaces/{id}/restart', '/api/workspaces/{id}/pause', '/api/workspaces/{id}/resume']) {
      expect(Object.keys(doc.paths[path].post.responses)).toContain('409');
    }
    const get = JSON.stringify(doc.paths['/api/workspaces/{id}'].get.responses['200']);
    for (const field of ['containerId', 'urls', 'codeServer', 'stats', 'cpu', 'memory', 'disk']) expect(get).toContain(field);
    const props = doc.paths['/api/workspaces/{id}'].get.responses['200'].content['application/json'].schema.properties;
    expect(props.port).toEqual({ type: 'integer' });
    expect(props.containerId).toMatchObject({ type: 'string', nullable: true });
    expect(props.status.enum).toEqual(['creating', 'starting', 'running', 'stopping', 'stopped', 'restarting', 'failed', 'paused']);
    for (const path of ['/api/workspaces/{id}/snapshots', '/api/workspaces/{id}/fork']) expect(Object.keys(doc.paths[path].post.responses)).toEqual(expect.arrayContaining(['201', '404', '409', '429']));
    expect(Object.keys(doc.paths['/api/snapshots/{id}'].delete.responses)).toEqual(expect.arrayContaining(['200', '404']));
    // A delete succeeds while workspaces made from the snapshot exist: no 409 to document.
    expect(Object.keys(doc.paths['/api/snapshots/{id}'].delete.responses)).not.toContain('409');
  });

  test('/openapi.json gives the streaming answers of logs and exec as text/event-stream beside their JSON', async () => {
    const doc = await dereferencedDocument(base());
    const streams = [
      { op: doc.paths['/api/workspaces/{id}/logs'].get, json: 'logs', events: ['event: end', 'event: dropped', 'keep-alive'] },
      { op: doc.paths['/api/workspaces/{id}/exec'].post, json: 'exitCode', events: ['event: stdout', 'event: stderr', 'event: exit', 'event: error'] },
    ];
    for (const { op, json, events } of streams) {
      const content = op.responses['200'].content;
      expect(Object.keys(content).sort()).toEqual(['application/json', 'text/event-stream']);
      expect(content['application/json'].schema.properties).toHaveProperty(json);
      const sse = content['text/event-stream'];
      expect(sse.schema.type).toBe('string');
      for (const e of events) expect(sse.schema.description).toContain(e);
      expect(sse.example).toStartWith(': connected\n\n');
      expect(sse.example).toEndWith('\n\n');
      // The error answers stay as generated.
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '401', '404', '502']));
    }
  });

  test('/openapi serves the interactive reference without a token', async () => {
    const res = await fetch(base() + '/openapi');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
  });
});

describe('tokens', () => {
  test('every /api route without a token answers 401 UNAUTHORIZED', async () => {
    const calls: [string, string][] = [
      ['GET', '/api/workspaces'],
      ['POST', '/api/workspaces'],
      ['GET', '/api/workspaces/ws_x'],
      ['POST', '/api/workspaces/ws_x/start'],
      ['POST', '/api/workspaces/ws_x/stop'],
      ['POST', '/api/workspaces/ws_x/restart'],
      ['DELETE', '/api/workspaces/ws_x'],
    ];
    for (const [method, path] of calls) {
      const res = await fetch(base() + path, { method });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).error.code).toBe('UNAUTHORIZED');
    }
  });

  test('an expired token answers 401', async () => {
    const res = await fetch(base() + '/api/workspaces', { headers: { authorization: `Bearer ${p.token('alice', { ttlSeconds: -120 })}` } });
    expect(res.status).toBe(401);
  });
});

describe('validation', () => {
  async function invalid(body: unknown, property?: string) {
    const res = await post(body);
    expect(res.status).toBe(400);
    const b = (await res.json()) as any;
    expect(b.error.code).toBe('INVALID_REQUEST');
    expect(typeof b.error.message).toBe('string');
    if (property) expect(JSON.stringify(b.error.details)).toContain(property);
    return b;
  }

  test('a body that is not JSON answers 400 INVALID_REQUEST', async () => {
    const b = await invalid('{"name": "broken",');
    expect(b.error.message).toContain('JSON');
  });

  test('a missing or malformed name answers 400 without echoing it', async () => {
    await invalid({}, '/name');
    await invalid({ name: '' }, '/name');
    const b = await invalid({ name: 'Has Spaces-And-UPPER-s3cr3t' }, '/name');
    expect(JSON.stringify(b)).not.toContain('s3cr3t');
    await invalid({ name: '-leading-dash' }, '/name');
    await invalid({ name: 'x'.repeat(64) }, '/name');
  });

  test('ports outside 1024-65535 or not whole numbers answer 400', async () => {
    await invalid({ name: 'p1', port: 80 }, '/port');
    await invalid({ name: 'p2', port: 70000 }, '/port');
    await invalid({ name: 'p3', port: 3000.5 }, '/port');
    await invalid({ name: 'p4', port: '3000x' }, '/port');
  });

  test('an unknown type or template answers 400', async () => {
    await invalid({ name: 't1', type: 'forever' }, '/type');
    const b = await invalid({ name: 't2', template: 'no-such-template' }, '/template');
    expect(b.error.details.known).toEqual(expect.arrayContaining(['bun-typescript', 'minimal']));
  });

  test('repo URLs that are not network transports answer 400', async () => {
    for (const url of ['file:///etc', '/srv/repo.git', '../repo', 'ext::sh -c id', '--upload-pack=id', 'ftp://example.com/r.git']) {
      await invalid({ name: 'r1', template: 'minimal', repo: { url } }, '/repo/url');
    }
    await invalid({ name: 'r2', template: 'minimal', repo: { url: 'https://example.com/r.git', branch: '--evil' } }, '/repo/branch');
  });

  test('rejected creations leave nothing behind', async () => {
    const res = await p.api('workspaces', '/api/workspaces', { as: 'admin' });
    expect(((await res.json()) as any).workspaces).toEqual([]);
  });

  test('an unknown route answers 404 in the envelope', async () => {
    const res = await p.api('workspaces', '/api/nothing-here');
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe('NOT_FOUND');
  });
});

describe('rate limits', () => {
  let limited: TestPlatform;
  beforeAll(async () => {
    limited = await startTestPlatform({ services: ['workspaces'], env: { APP_RATE_LIMIT_AUTHENTICATED: '5', APP_RATE_LIMIT_ANONYMOUS: '3' } });
  });
  afterAll(async () => {
    await limited?.close();
  });

  test('responses carry the limit headers and the limit answers 429 RATE_LIMITED with Retry-After', async () => {
    const seen: Response[] = [];
    for (let i = 0; i < 6; i++) seen.push(await limited.api('workspaces', '/api/workspaces', { as: 'carol' }));
    const first = seen[0]!;
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit')).toBe('5');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(Number(first.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    const last = seen[5]!;
    expect(last.status).toBe(429);
    expect(((await last.json()) as any).error.code).toBe('RATE_LIMITED');
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last.headers.get('x-ratelimit-remaining')).toBe('0');
    // The budget is per actor: another one is unaffected.
    expect((await limited.api('workspaces', '/api/workspaces', { as: 'dave' })).status).toBe(200);
  });

  test('requests without a token have their own, lower limit', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await fetch(limited.url('workspaces') + '/health')).status);
    expect(codes).toEqual([200, 200, 200, 429]);
  });

  test('a malformed limit stops start-up naming the variable', async () => {
    await expect(startTestPlatform({ services: ['workspaces'], env: { APP_RATE_LIMIT_AUTHENTICATED: 'lots' } })).rejects.toThrow('APP_RATE_LIMIT_AUTHENTICATED');
  });
});

describe('without a reachable engine', () => {
  let away: TestPlatform;
  beforeAll(async () => {
    away = await startTestPlatform({ services: ['workspaces'], env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock', APP_WORKSPACE_PORT_RANGE: '20000-20999' } });
  });
  afterAll(async () => {
    await away?.close();
  });

  test('Keel starts and lists workspaces', async () => {
    const res = await away.api('workspaces', '/api/workspaces');
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).workspaces).toEqual([]);
  });

  test('creating a workspace is refused at once with 503 ENGINE_UNAVAILABLE and a Retry-After', async () => {
    const res = await away.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'no-engine', template: 'minimal' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    const body = (await res.json()) as any;
    expect(body.error.code).toBe('ENGINE_UNAVAILABLE');
    expect(body.error.message).toContain('no container engine answers');
    expect(JSON.stringify(body)).not.toContain('no-engine');
  });

  test('a refused creation stores nothing: the list stays empty and the name stays free', async () => {
    const res = await away.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'refused-once', template: 'minimal', port: 20999 } });
    expect(res.status).toBe(503);
    expect(((await (await away.api('workspaces', '/api/workspaces', { as: 'admin' })).json()) as any).workspaces).toEqual([]);
    // The same name and port again: still 503 (not 409 WORKSPACE_EXISTS or PORT_UNAVAILABLE), since nothing was reserved.
    const again = await away.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'refused-once', template: 'minimal', port: 20999 } });
    expect(again.status).toBe(503);
    expect(await errorCode(again)).toBe('ENGINE_UNAVAILABLE');
  });

  test('input errors still answer 400 before the engine is asked', async () => {
    const res = await away.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'x', template: 'no-such-template' } });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe('INVALID_REQUEST');
  });

  test('the OpenAPI description documents the 503 of create', async () => {
    const doc = (await (await fetch(away.url('workspaces') + '/openapi.json')).json()) as any;
    const create = doc.paths['/api/workspaces'].post;
    expect(Object.keys(create.responses)).toContain('503');
    expect(create.description).toContain('ENGINE_UNAVAILABLE');
  });
});
