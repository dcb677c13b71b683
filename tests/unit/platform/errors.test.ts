// Typed error factories and tables (platform/errors.ts): a service throws a code, a message and
// details; what the code means (status, retryable, headers) comes from the table of whoever renders
// it, never from a process-wide registry. Pure: no app, no I/O.
import { describe, expect, test } from 'bun:test';
import { AppError, defineErrors, errorFactories, headersOf, joinErrors, meaningOf } from '../../../src/platform/errors';
import { envelopeErrorTable, problemErrorTable } from '../../../src/platform/platform.errors';
import { WorkspaceErrors, workspaceErrorTable } from '../../../src/services/workspaces/workspaces.errors';
import { CatalogErrors, catalogErrorTable } from '../../../src/services/catalog/catalog.errors';

const table = defineErrors({
  GADGET_BUSY: { status: 503, retryAfter: 7, description: 'the gadget is busy' },
  'gadget-gone': { status: 410, retryable: false, category: 'recoverable', description: 'the gadget is gone' },
});
const errors = errorFactories(table);

describe('factories', () => {
  test('a factory makes an AppError of its code with the message and details given, and nothing of HTTP', () => {
    const e = errors.GADGET_BUSY('busy', { id: 'g1' });
    expect(e).toBeInstanceOf(AppError);
    expect(e).toMatchObject({ code: 'GADGET_BUSY', message: 'busy', details: { id: 'g1' } });
    expect(Object.keys(e)).not.toContain('status');
    expect('status' in e || 'headers' in e || 'retryable' in e).toBe(false);
  });

  test("a service's factories know only its table's codes", () => {
    expect(Object.keys(WorkspaceErrors).sort()).toEqual(Object.keys(workspaceErrorTable).sort());
    // @ts-expect-error a catalog code is not the workspace API's: it does not compile
    expect(WorkspaceErrors.CATALOG_WORK_NOT_FOUND).toBeUndefined();
    // @ts-expect-error the envelope's codes are not the problem+json services'
    expect(CatalogErrors.WORKSPACE_NOT_FOUND).toBeUndefined();
  });
});

describe('meaning', () => {
  test("a code means what the rendering service's table says", () => {
    const e = WorkspaceErrors.ENGINE_UNAVAILABLE('no engine');
    const meaning = meaningOf(e, workspaceErrorTable);
    expect(meaning).toMatchObject({ status: 503, retryable: true, category: 'transient' });
    expect(headersOf(e, meaning)).toEqual({ 'retry-after': '5' });
  });

  test('a code the table does not declare is an internal failure, 500, whatever another table says', () => {
    const e = CatalogErrors.CATALOG_WORK_NOT_FOUND('no such work');
    expect(meaningOf(e, catalogErrorTable).status).toBe(404);
    expect(meaningOf(e, workspaceErrorTable)).toMatchObject({ status: 500, retryable: true });
  });

  test("the answerer's meaning sent over the bus counts only where the table has no row", () => {
    const relayed = new AppError('CATALOG_WORK_NOT_FOUND', 'no such work', {}, { remote: { status: 404, retryable: false } });
    expect(meaningOf(relayed, workspaceErrorTable)).toMatchObject({ status: 404, retryable: false });
    const known = new AppError('GADGET_BUSY', 'busy', {}, { remote: { status: 418 } });
    expect(meaningOf(known, table).status).toBe(503);
  });

  test("Retry-After is the table's unless the throw site knows better; a throw site's header is added", () => {
    const e = errors.GADGET_BUSY('busy', {}, { retryAfter: 42, headers: { 'content-range': 'bytes */10' } });
    expect(headersOf(e, meaningOf(e, table))).toEqual({ 'retry-after': '42', 'content-range': 'bytes */10' });
    const fixed = errors.GADGET_BUSY('busy');
    expect(headersOf(fixed, meaningOf(fixed, table))).toEqual({ 'retry-after': '7' });
  });

  test('retryable and category default from the status and may be overridden', () => {
    expect(meaningOf(errors['gadget-gone']('gone'), table)).toMatchObject({ status: 410, retryable: false, category: 'recoverable' });
    expect(meaningOf(new AppError('validation', 'bad'), problemErrorTable)).toMatchObject({ status: 422, retryable: false, category: 'permanent' });
  });
});

describe('joining tables', () => {
  test('a code joined with two statuses is refused', () => {
    expect(() => joinErrors(envelopeErrorTable, defineErrors({ NOT_FOUND: { status: 410, description: 'elsewhere' } }))).toThrow(/NOT_FOUND/);
  });

  test('the same row joined twice is one code', () => {
    expect(joinErrors(table, table)).toEqual(table);
  });
});
