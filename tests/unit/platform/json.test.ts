// The one hardened JSON body parser (platform/json.ts) on its own: what it refuses, why, and that its
// message never repeats the text it received. tests/fuzz/hardened-body.test.ts drives the same rules
// through every service over HTTP.
import { describe, expect, test } from 'bun:test';
import { isJsonMediaType, jsonDepth, JsonRefusal, MAX_JSON_DEPTH, parseJsonBody } from '../../../src/platform/json';

const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
const refusal = (text: string): JsonRefusal => {
  try {
    parseJsonBody(text);
  } catch (e) {
    if (e instanceof JsonRefusal) return e;
    throw e;
  }
  throw new Error('the body was accepted');
};

describe('parseJsonBody', () => {
  test('returns ordinary JSON as JSON.parse does', () => {
    expect(parseJsonBody('{"name":"demo","env":{"A":"1"},"n":[1,2.5,null,true]}')).toEqual({ name: 'demo', env: { A: '1' }, n: [1, 2.5, null, true] });
  });

  test(`accepts nesting up to ${MAX_JSON_DEPTH} levels and refuses one more as too deep`, () => {
    expect(parseJsonBody(nested(MAX_JSON_DEPTH))).toBeArray();
    const e = refusal(nested(MAX_JSON_DEPTH + 1));
    expect(e.reason).toBe('depth');
    expect(e.message).toContain(String(MAX_JSON_DEPTH));
  });

  test('brackets inside strings, escaped quotes included, do not count as nesting', () => {
    expect(jsonDepth(`{"a":"${'['.repeat(100)}\\"${'{'.repeat(100)}"}`)).toBe(1);
    expect(parseJsonBody(`{"a":"${'['.repeat(100)}"}`)).toEqual({ a: '['.repeat(100) });
  });

  test.each(['{"__proto__":{"admin":true}}', '{"a":{"constructor":{}}}', '[{"prototype":1}]', '{"\\u005f_proto__":1}'])('refuses the reserved key in %s', (text) => {
    expect(refusal(text).reason).toBe('reserved-key');
  });

  test('refuses broken JSON without repeating it', () => {
    const e = refusal('{"secret-zqX": ');
    expect(e.reason).toBe('syntax');
    expect(e.message).toBe('the request body is not valid JSON');
    expect(e.message).not.toContain('zqX');
  });
});

describe('isJsonMediaType', () => {
  test.each([
    ['application/json', true],
    ['Application/JSON; charset=utf-8', true],
    ['application/merge-patch+json', true],
    ['text/json', false],
    ['application/x-www-form-urlencoded', false],
    [null, false],
  ] as const)('%s is JSON: %s', (type, expected) => {
    expect(isJsonMediaType(type)).toBe(expected);
  });
});
