// What the route fuzzer sends: fast-check arbitraries for bodies, path parameters and query
// strings. Every string a client controls carries MARKER, so a test can tell whether a response
// repeats anything it received.
import fc from 'fast-check';

/** Appears in every generated value; it must never appear in an error response. */
export const MARKER = 'zqXfuzzMARKq';

/** Runs per route in `npm test`; `FUZZ_RUNS=5000 bun test tests/fuzz` runs longer (docs/api-hardening.md). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 40);
/** A fixed seed, so `npm test` sends the same requests each time; FUZZ_SEED=random draws one (printed on failure). */
export const FUZZ_SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 20261123);

const RESERVED = ['__proto__', 'constructor', 'prototype'];

/** A string that contains the marker: unicode, control characters, path tricks, or long. */
export const markedString: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.constantFrom('../../etc/passwd', '%00', '\u0000', '\ud800', 'a b', '<script>', '${x}', '*', '.', '/', '\\'),
    ),
    fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }) }),
  )
  .map(([s, pad]) => `${s}${MARKER}${'x'.repeat(pad)}`);

const key = fc.oneof({ weight: 6, arbitrary: markedString.map((s) => s.slice(0, 40)) }, { weight: 1, arbitrary: fc.constantFrom(...RESERVED) });

/** Any JSON value, with reserved keys and marked strings among its keys and values. */
export const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    markedString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A value of a JSON type the schema does not allow. */
function wrongType(schema: Record<string, any>): fc.Arbitrary<unknown> {
  const type = schema.type ?? (schema.enum ? typeof schema.enum[0] : undefined);
  const choices: fc.Arbitrary<unknown>[] = [fc.constant(null), fc.array(markedString, { maxLength: 2 }), fc.dictionary(key, markedString, { maxKeys: 2 })];
  if (type !== 'string') choices.push(markedString);
  if (type !== 'number' && type !== 'integer' && type !== 'string') choices.push(fc.integer());
  if (type === 'array') choices.splice(1, 1); // an array of strings may be valid
  if (type === 'object') choices.splice(2, 1);
  return fc.oneof(...choices);
}

/** A value the schema may accept, marked where it is a free string. */
function plausible(schema: Record<string, any>): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf ?? schema.oneOf) return fc.oneof(...(schema.anyOf ?? schema.oneOf).map(plausible));
  switch (schema.type) {
    case 'string':
      return markedString;
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(plausible(schema.items ?? {}), { maxLength: 3 });
    case 'object':
      return objectFor(schema);
    default:
      return anyJson;
  }
}

function objectFor(schema: Record<string, any>): fc.Arbitrary<Record<string, unknown>> {
  const props: Record<string, Record<string, any>> = schema.properties ?? {};
  return fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, plausible(s)])), { requiredKeys: schema.required ?? [] });
}

/**
 * A body shaped like the route's schema with one declared property of the wrong JSON type, so it is
 * always invalid: the fuzzer reaches the validator and the routes' rules without ever creating a
 * workspace, an actor or a scan.
 */
export function brokenBody(schema: Record<string, any>): fc.Arbitrary<unknown> {
  const names = Object.keys(schema.properties ?? {});
  if (schema.type !== 'object' || names.length === 0) return anyJson;
  return fc
    .tuple(objectFor(schema), fc.constantFrom(...names))
    .chain(([obj, name]) => wrongType(schema.properties[name]).map((bad) => ({ ...obj, [name]: bad })))
    .chain((obj) =>
      fc.oneof(
        fc.constant(obj),
        fc.dictionary(key, anyJson, { minKeys: 1, maxKeys: 3 }).map((extra) => ({ ...extra, ...obj })),
      ),
    );
}

/** JSON text nested far past the limit, the marker at the bottom, at the top or under a declared property. */
function nested(names: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.oneof(fc.integer({ min: 33, max: 100 }), fc.integer({ min: 1_000, max: 50_000 })), fc.boolean(), fc.constantFrom(undefined, ...names))
    .map(([depth, arrays, under]) => {
      const deep = arrays ? '['.repeat(depth) + JSON.stringify(MARKER) + ']'.repeat(depth) : '{"a":'.repeat(depth) + JSON.stringify(MARKER) + '}'.repeat(depth);
      return under === undefined ? deep : `{${JSON.stringify(under)}:${deep}}`;
    });
}

/**
 * A body whose fields sit only under a reserved key (`__proto__`, or `constructor.prototype`): read
 * through the prototype chain, it would pass validation. It must be refused.
 */
function hiddenUnderReserved(schema: Record<string, any> | undefined): fc.Arbitrary<string> {
  const inner = schema?.type === 'object' ? objectFor(schema) : anyJson;
  return fc
    .tuple(inner, fc.constantFrom('__proto__', 'constructor', 'escaped'))
    .map(([value, how]) =>
      how === '__proto__'
        ? `{"__proto__":${JSON.stringify(value)}}`
        : how === 'constructor'
          ? `{"constructor":{"prototype":${JSON.stringify(value)}}}`
          : `{"\\u005f_proto__":${JSON.stringify(value)}}`,
    );
}

/** Text that is not JSON. */
const brokenText = fc.oneof(
  markedString.map((s) => `{"a": ${JSON.stringify(s)},}`),
  markedString.map((s) => `${s}{`),
  markedString.map((s) => `[${JSON.stringify(s)}`),
);

export interface FuzzBody {
  text: string | undefined;
  contentType: string | undefined;
  /** The hardened parser must refuse this body (when sent as JSON): too deep, a reserved key, not JSON. */
  mustRefuse: boolean;
}

const REFUSING_TYPES = /^(application\/json|application\/[^;]*\+json|multipart\/|application\/x-www-form-urlencoded)/i;

/** The body of one request: none, any JSON, nested too deep, broken, hidden under a reserved key, or schema-shaped and invalid. */
export function bodyFor(schema: Record<string, any> | undefined): fc.Arbitrary<FuzzBody> {
  const names = Object.keys(schema?.properties ?? {});
  const refused = (a: fc.Arbitrary<string>) => a.map((text) => ({ text, refuse: true }));
  const accepted = (a: fc.Arbitrary<string | undefined>) => a.map((text) => ({ text, refuse: false }));
  const text = fc.oneof(
    { weight: 1, arbitrary: accepted(fc.constantFrom(undefined, '', ' ')) },
    { weight: 3, arbitrary: accepted(anyJson.map((v) => JSON.stringify(v))) },
    { weight: 2, arbitrary: refused(nested(names)) },
    { weight: 2, arbitrary: refused(brokenText) },
    { weight: 2, arbitrary: refused(hiddenUnderReserved(schema)) },
    { weight: schema ? 4 : 0, arbitrary: accepted(brokenBody(schema ?? {}).map((v) => JSON.stringify(v))) },
  );
  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(undefined, 'application/json; charset=utf-8', 'Application/JSON', 'application/merge-patch+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream'),
    },
  );
  return fc.tuple(text, contentType).map(([t, contentType]) => ({
    text: t.text,
    contentType,
    // A body the server never reads as JSON (no type, text/plain) is not the parser's to refuse.
    mustRefuse: t.refuse && contentType !== undefined && REFUSING_TYPES.test(contentType),
  }));
}

/** A path parameter: marked, unicode, traversal, or empty. */
export const pathParam = markedString.map((s) => encodeURIComponent(s.slice(0, 300).toWellFormed()));

/** A query string over the route's declared parameters and some it does not know. */
export function queryFor(names: string[]): fc.Arbitrary<string> {
  const value = fc.oneof(markedString.map((s) => s.slice(0, 200)), fc.constantFrom('true', 'false', '0', '-1', '1e309', '', '[]'));
  return fc
    .tuple(fc.subarray(names), fc.array(fc.tuple(key, value), { maxLength: 2 }))
    .chain(([known, unknown]) => fc.tuple(fc.constant(known), fc.array(value, { minLength: known.length, maxLength: known.length }), fc.constant(unknown)))
    .map(([known, values, unknown]) => {
      const q = new URLSearchParams();
      known.forEach((n, i) => q.append(n, values[i]!));
      for (const [k, v] of unknown) q.append(k, v);
      const s = q.toString();
      return s ? `?${s}` : '';
    });
}
