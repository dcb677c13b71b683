// The two error models (platform/http/errors.ts): problem+json of the media services and the body
// limit of both, on small apps built from the real plugins.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia, t } from 'elysia';
import { errorHandling } from '../../../src/platform/http/errors';
import { envelopeErrorTable, problemErrorTable } from '../../../src/platform/platform.errors';

const envelope = new Elysia()
  .use(errorHandling('envelope', { production: false, errors: envelopeErrorTable }))
  .post('/things', ({ body }) => body, { body: t.Object({ name: t.String({ minLength: 1 }) }) });
const problems = new Elysia()
  .use(errorHandling('problem', { production: false, errors: problemErrorTable }))
  .post('/scan', ({ body }) => body, { body: t.Object({ path: t.String({ minLength: 1 }) }) });

let base = '';
let pbase = '';
beforeAll(() => {
  envelope.listen({ hostname: '127.0.0.1', port: 0 });
  problems.listen({ hostname: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${envelope.server!.port}`;
  pbase = `http://127.0.0.1:${problems.server!.port}`;
});
afterAll(() => {
  envelope.stop(true);
  problems.stop(true);
});

describe('problem+json', () => {
  test('validation is 422 with on, property and detail outside production', async () => {
    const res = await fetch(pbase + '/scan', { method: 'POST', body: '{"path":""}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const p = await res.json();
    expect(p).toMatchObject({ status: 422, code: 'validation', on: 'body', property: '/path' });
    expect(typeof p.type).toBe('string');
    expect(typeof p.title).toBe('string');
  });

  test('broken JSON is 400 parse and an unknown route 404 not-found', async () => {
    const parse = await fetch(pbase + '/scan', { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } });
    expect(parse.status).toBe(400);
    expect((await parse.json()).code).toBe('parse');
    const nf = await fetch(pbase + '/nope');
    expect(nf.status).toBe(404);
    expect((await nf.json()).code).toBe('not-found');
  });
});

describe('request size', () => {
  test('a body over the limit is refused with 413 in each error model, before it is read', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(5 * 1024 * 1024) });
    const env = await fetch(base + '/things', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(env.status).toBe(413);
    expect((await env.json()).error.code).toBe('PAYLOAD_TOO_LARGE');
    const prob = await fetch(pbase + '/scan', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(prob.status).toBe(413);
    expect(prob.headers.get('content-type')).toBe('application/problem+json');
    expect((await prob.json()).code).toBe('payload-too-large');
  });
});
