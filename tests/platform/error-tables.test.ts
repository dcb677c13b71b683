// Error tables (platform/errors.ts): a service throws its table's typed factories (a code, a message,
// details; nothing of HTTP) and the table given to the app's error model alone says the status,
// Retry-After and the problem fields; rendered through a real app. No process-wide registry.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { AppError, defineErrors, errorFactories, joinErrors, meaningOf } from '../../src/platform/errors';
import { envelopeErrorTable, problemErrorTable } from '../../src/platform/platform.errors';
import { busFailure, failureError } from '../../src/platform/bus/bus';
import { errorHandling } from '../../src/platform/http/errors';

const table = defineErrors({
  TEST_GADGET_NOT_FOUND: { status: 404, description: 'no such gadget' },
  TEST_GADGET_BUSY: { status: 503, retryAfter: 7, description: 'the gadget is busy' },
  'test-widget-gone': { status: 410, retryable: false, category: 'recoverable', description: 'the widget is gone' },
});
const errors = errorFactories(table);

const envelope = new Elysia()
  .use(errorHandling('envelope', { production: false, errors: joinErrors(envelopeErrorTable, table) }))
  .get('/missing', () => {
    throw errors.TEST_GADGET_NOT_FOUND('gadget not found', { id: 'g1' });
  })
  .get('/busy', () => {
    throw errors.TEST_GADGET_BUSY('busy');
  })
  .get('/busy-for', () => {
    throw errors.TEST_GADGET_BUSY('busy', {}, { retryAfter: 42 });
  })
  .get('/undeclared', () => {
    throw new AppError('TEST_NOBODY_DECLARED_THIS', 'oops');
  });
const problems = new Elysia()
  .use(errorHandling('problem', { production: false, errors: joinErrors(problemErrorTable, table) }))
  .get('/widget', () => {
    throw errors['test-widget-gone']('The widget is gone');
  })
  .get('/gadget', () => {
    throw errors.TEST_GADGET_NOT_FOUND('Gadget not found');
  });
// Another app of the same process whose table lacks the gadget codes: its throw is its own failure.
const elsewhere = new Elysia().use(errorHandling('problem', { production: false, errors: problemErrorTable })).get('/gadget', () => {
  throw errors.TEST_GADGET_NOT_FOUND('Gadget not found');
});

let base = '';
let pbase = '';
let ebase = '';
beforeAll(() => {
  envelope.listen({ hostname: '127.0.0.1', port: 0 });
  problems.listen({ hostname: '127.0.0.1', port: 0 });
  elsewhere.listen({ hostname: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${envelope.server!.port}`;
  pbase = `http://127.0.0.1:${problems.server!.port}`;
  ebase = `http://127.0.0.1:${elsewhere.server!.port}`;
});
afterAll(() => {
  envelope.stop(true);
  problems.stop(true);
  elsewhere.stop(true);
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

  test("a code is the table's of the app that renders it, not whatever another module declared", async () => {
    const own = await fetch(pbase + '/gadget');
    expect(own.status).toBe(404);
    expect(await own.json()).toMatchObject({ code: 'TEST_GADGET_NOT_FOUND', status: 404 });
    const foreign = await fetch(ebase + '/gadget');
    expect(foreign.status).toBe(500);
    expect(await foreign.json()).toMatchObject({ code: 'TEST_GADGET_NOT_FOUND', status: 500, retryable: true });
  });

  test('a factory makes an AppError of its code that carries no HTTP status', () => {
    const e = errors.TEST_GADGET_NOT_FOUND('gadget not found', { id: 'g1' });
    expect(e).toBeInstanceOf(AppError);
    expect(e.code).toBe('TEST_GADGET_NOT_FOUND');
    expect(e.details).toEqual({ id: 'g1' });
    expect('status' in e).toBe(false);
  });

  test('joining tables that give one code two statuses is refused', () => {
    expect(() => joinErrors(table, defineErrors({ TEST_GADGET_NOT_FOUND: { status: 410, description: 'elsewhere' } }))).toThrow(/TEST_GADGET_NOT_FOUND/);
    expect(joinErrors(table, table).TEST_GADGET_NOT_FOUND.status).toBe(404);
  });

  test("an error answered on the bus carries the answerer's meaning where the asker's table has no row for it", () => {
    const wire = JSON.parse(JSON.stringify(busFailure(errors.TEST_GADGET_BUSY('busy'), table)));
    wire.code = 'TEST_ONLY_THE_ANSWERER_KNOWS';
    const err = failureError(wire);
    expect(err.code).toBe('TEST_ONLY_THE_ANSWERER_KNOWS');
    expect(meaningOf(err, problemErrorTable)).toMatchObject({ status: 503, retryable: true });
  });
});
