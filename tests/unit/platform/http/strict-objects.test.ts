// nonObjectAt finds a value that is not an object where the schema wants one (Elysia's body
// cleaning would rebuild it into `{}`), through optional fields, records and arrays.
import { expect, test } from 'bun:test';
import { t } from 'elysia';
import { nonObjectAt } from '../../../../src/platform/http/strict-objects';

const Body = t.Object({
  name: t.String(),
  context: t.Optional(t.Object({ system: t.Optional(t.String()), notes: t.Optional(t.Record(t.String(), t.String())) })),
  servers: t.Optional(t.Array(t.Object({ url: t.String(), headers: t.Optional(t.Record(t.String(), t.String())) }))),
});

test('objects where objects are wanted, and absent optional ones, pass', () => {
  expect(nonObjectAt(Body, { name: 'a' })).toBeNull();
  expect(nonObjectAt(Body, { name: 'a', context: {}, servers: [{ url: 'u', headers: { a: 'b' } }] })).toBeNull();
  expect(nonObjectAt(Body, { name: 'a', context: { notes: { repo: 'x' } } })).toBeNull();
});

test.each([[false], [0], ['x'], [null], [[]], [true]])('a context of %p is named', (context) => {
  expect(nonObjectAt(Body, { name: 'a', context })).toBe('/context');
});

test('a nested record and an array item are named by their pointer', () => {
  expect(nonObjectAt(Body, { name: 'a', context: { notes: false } })).toBe('/context/notes');
  expect(nonObjectAt(Body, { name: 'a', servers: [{ url: 'u' }, { url: 'v', headers: 'x' }] })).toBe('/servers/1/headers');
  expect(nonObjectAt(Body, { name: 'a', servers: [7] })).toBe('/servers/0');
});

test('a body that is not an object is named at the root', () => {
  expect(nonObjectAt(Body, 'text')).toBe('/');
});

test('values that are not objects where the schema wants none are left to the check', () => {
  expect(nonObjectAt(Body, { name: 42 })).toBeNull();
});
