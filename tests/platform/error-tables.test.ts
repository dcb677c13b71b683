// Error tables (platform/errors.ts): a service throws AppError(code, message, details) and its table
// alone says the status, Retry-After and the problem fields; rendered through a real app.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { AppError, defineErrors } from '../../src/platform/errors';
import { busFailure, failureError } from '../../src/platform/bus/bus';
import { errorHandling } from '../../src/platform/http/errors';

const table = defineErrors({
  TEST_GADGET_NOT_FOUND: { status: 404, description: 'no such gadget' },
  TEST_GADGET_BUSY: { status: 503, retryAfter: 7, description: 'the gadget is busy' },
  'test-widget-gone': { status: 410, retryable: false, category: 'recoverable', description: 'the widget is gone' },
});

const envelope = new Elysia()
  .use(errorHandling('envelope', { production: false }))
  .get('/missing', () => {
    throw new AppError('TEST_GADGET_NOT_FOUND', 'gadget not found', { id: 'g1' });
  })
  .get('/busy', () => {
    throw new AppError('TEST_GADGET_BUSY', 'busy');
  })
  .get('/busy-for', () => {
    throw new AppError('TEST_GADGET_BUSY', 'busy', {}, { retryAfter: 42 });
  })
  .get('/undeclared', () => {
    throw new AppError('TEST_NOBODY_DECLARED_THIS', 'oops');
  });
const problems = new Elysia().use(errorHandling('problem', { production: false })).get('/widget', () => {
  throw new AppError('test-widget-gone', 'The widget is gone');
});

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

describe('error tables', () => {
  test('the status of a thrown code comes from its table, the body from the throw site', async () => {
    const res = await fetch(base + '/missing');
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('{"error":{"code":"TEST_GADGET_NOT_FOUND","message":"gadget not found","details":{"id":"g1"}}}');
  });

  test("Retry-After is the table's unless the throw site knows better", async () => {
    const fixed = await fetch(base + '/busy');
    expect(fixed.status).toBe(503);
    expect(fixed.headers.get('retry-after')).toBe('7');
    const dynamic = await fetch(base + '/busy-for');
    expect(dynamic.headers.get('retry-after')).toBe('42');
  });

  test('problem+json takes retryable and category from the table', async () => {
    const res = await fetch(pbase + '/widget');
    expect(res.status).toBe(410);
    expect(await res.json()).toMatchObject({ code: 'test-widget-gone', status: 410, retryable: false, category: 'recoverable', title: 'The widget is gone' });
  });

  test('a code no table declares is answered as an internal failure, 500', async () => {
    const res = await fetch(base + '/undeclared');
    expect(res.status).toBe(500);
  });

  test('declaring a known code again with another status is refused', () => {
    expect(() => defineErrors({ TEST_GADGET_NOT_FOUND: { status: 410, description: 'elsewhere' } })).toThrow(/TEST_GADGET_NOT_FOUND/);
    expect(table.TEST_GADGET_NOT_FOUND.status).toBe(404);
  });

  test('an error answered on the bus keeps its status where the asker declares no table for it', () => {
    const wire = JSON.parse(JSON.stringify(busFailure(new AppError('TEST_GADGET_BUSY', 'busy'))));
    wire.code = 'TEST_ONLY_THE_ANSWERER_KNOWS';
    const err = failureError(wire);
    expect(err.code).toBe('TEST_ONLY_THE_ANSWERER_KNOWS');
    expect(err.status).toBe(503);
    expect(err.retryable).toBe(true);
  });
});
