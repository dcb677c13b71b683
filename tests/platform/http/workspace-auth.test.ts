// The workspace API's auth and rate limits (platform/http/workspace-auth.ts) in front of the envelope
// error model, on a small app built from the real plugins.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia, t } from 'elysia';
import { mintToken, signHs256 } from '../../../src/platform/auth/workspace-token';
import { errorHandling } from '../../../src/platform/http/errors';
import { workspaceAuth } from '../../../src/platform/http/workspace-auth';
import { TEST_SECRET } from '../../helpers/platform';
import { envelopeErrorTable } from '../../../src/platform/platform.errors';

// The limiter's clock: the rate-limit test moves it to the next window instead of waiting a minute.
let now = Date.now();
const app = new Elysia()
  .use(errorHandling('envelope', { production: false, errors: envelopeErrorTable }))
  .use(workspaceAuth({ secret: TEST_SECRET, anonymousLimit: 50, authenticatedLimit: 8, clock: { now: () => now } }))
  .get('/open', () => ({ ok: true }))
  .post('/api/things', ({ body, actor }) => ({ name: body.name, owner: actor.id }), { body: t.Object({ name: t.String({ minLength: 1 }) }) })
  .get('/api/boom', () => {
    throw new Error('secret internals at /root/path');
  });

let base = '';
beforeAll(() => {
  app.listen({ hostname: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${app.server!.port}`;
});
afterAll(() => app.stop(true));

const bearer = (tok: string) => ({ authorization: `Bearer ${tok}` });
const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(base + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('workspace envelope', () => {
  test('a route under /api without a token answers 401 UNAUTHORIZED', async () => {
    const res = await post('/api/things', '{"name":"x"}');
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe('UNAUTHORIZED');
  });

  test('tokens the contract refuses are all 401', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const hdr = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const bad = [
      'not-a-jwt',
      mintToken('f'.repeat(64), { sub: 'alice', ttlSeconds: 60 }),
      signHs256({ sub: 'alice', exp: nowS - 120 }, TEST_SECRET),
      signHs256({ sub: 'alice', exp: nowS + 600, nbf: nowS + 600 }, TEST_SECRET),
      signHs256({ sub: 'alice', exp: nowS + 600, iat: nowS + 600 }, TEST_SECRET),
      signHs256({ sub: '', exp: nowS + 600 }, TEST_SECRET),
      signHs256({ exp: nowS + 600 }, TEST_SECRET),
      signHs256({ sub: 'alice' }, TEST_SECRET),
      `${hdr({ alg: 'none', typ: 'JWT' })}.${hdr({ sub: 'alice', exp: nowS + 600 })}.`,
    ];
    for (const tok of bad) {
      const res = await post('/api/things', '{"name":"x"}', bearer(tok));
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe('UNAUTHORIZED');
    }
  });

  test('a valid token reaches the handler with its actor', async () => {
    const res = await post('/api/things', '{"name":"x"}', bearer(mintToken(TEST_SECRET, { sub: 'bob', ttlSeconds: 60 })));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ name: 'x', owner: 'bob' });
  });

  test('validation failures are 400 INVALID_REQUEST without the received value', async () => {
    const res = await post('/api/things', '{"name":"s3cr3t-value","x":1}'.replace('"s3cr3t-value"', '12345'), bearer(mintToken(TEST_SECRET, { sub: 'carol', ttlSeconds: 60 })));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(body.error.details.errors[0].property).toBe('/name');
    expect(JSON.stringify(body)).not.toContain('12345');
  });

  test('broken JSON is 400 INVALID_REQUEST', async () => {
    const res = await post('/api/things', '{"name":', bearer(mintToken(TEST_SECRET, { sub: 'dave', ttlSeconds: 60 })));
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('INVALID_REQUEST');
  });

  test('an unexpected exception is 500 INTERNAL_ERROR with no internals', async () => {
    const res = await fetch(base + '/api/boom', { headers: bearer(mintToken(TEST_SECRET, { sub: 'erin', ttlSeconds: 60 })) });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text).error.code).toBe('INTERNAL_ERROR');
    expect(text).not.toContain('/root/path');
  });

  test('every response carries the rate-limit headers and the limit answers 429 with Retry-After', async () => {
    now = Date.now();
    const tok = mintToken(TEST_SECRET, { sub: 'frank', ttlSeconds: 600 });
    const statuses: number[] = [];
    let last!: Response;
    for (let i = 0; i < 9; i++) {
      last = await fetch(base + '/open', { headers: bearer(tok) });
      statuses.push(last.status);
      expect(last.headers.get('x-ratelimit-limit')).toBe('8');
      expect(Number(last.headers.get('x-ratelimit-reset'))).toBeGreaterThan(now / 1000);
    }
    expect(statuses.slice(0, 8).every((s) => s === 200)).toBe(true);
    expect(last.status).toBe(429);
    expect(last.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await last.json()).error.code).toBe('RATE_LIMITED');
    now += 61_000; // next window
    expect((await fetch(base + '/open', { headers: bearer(tok) })).status).toBe(200);
  });
});
