// The one hardened JSON body parser every service uses (wired by platform/http/errors.ts).
// It refuses, before a service sees the body: text nested deeper than MAX_JSON_DEPTH (checked by a
// cheap scan before JSON.parse, so no parser, validator or copy ever recurses that deep), broken
// JSON, and the keys `__proto__`, `constructor` and `prototype` at any depth (after JSON escapes are
// decoded, so `"\u005f_proto__"` is refused too). Refusing, rather than dropping, these keys is
// deliberate: no Keel schema uses them, and a client that sends them learns so instead of having a
// field silently vanish (docs/api-hardening.md). A number no field can hold exactly (past 2^53, or
// 1e309, which JSON.parse turns into Infinity) is refused too: parsed, it is already another number
// (9007199254740993 becomes ...992), and a schema would take the rounded value as if it were sent.

/** Deepest nesting of arrays and objects a body may have. Keel's deepest schema (exec `env`) is 2. */
export const MAX_JSON_DEPTH = 32;

/** Largest request body any route accepts (the exec body with its env is the largest, ~2 MiB). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Keys that turn into prototype writes once a parsed object is copied or merged. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export type JsonRefusalReason = 'syntax' | 'depth' | 'reserved-key' | 'not-json' | 'number';

/** Why a body was refused. Its message names the rule, never the received text. */
export class JsonRefusal extends Error {
  constructor(
    readonly reason: JsonRefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'JsonRefusal';
  }
}

/**
 * The deepest nesting in `text`, counting `[` and `{` outside strings; stops early past `limit`.
 * Linear, no allocation: it runs before JSON.parse on every body.
 */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++; // the escaped character cannot end the string
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return max;
}

const refuseReserved = (key: string, value: unknown) => {
  if (RESERVED_KEYS.has(key)) throw new JsonRefusal('reserved-key', 'the request body uses a reserved key (__proto__, constructor or prototype)');
  // Integers are exact up to 2^53 - 1; past it (and at Infinity) the parsed number is not the one sent.
  if (typeof value === 'number' && !(Math.abs(value) <= Number.MAX_SAFE_INTEGER)) {
    throw new JsonRefusal('number', `the request body holds a number no field can hold exactly (beyond ${Number.MAX_SAFE_INTEGER})`);
  }
  return value;
};

/** Parses a request body under the rules above; throws JsonRefusal. */
export function parseJsonBody(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (jsonDepth(text, maxDepth) > maxDepth) {
    throw new JsonRefusal('depth', `the request body nests arrays and objects deeper than ${maxDepth} levels`);
  }
  try {
    // The reviver sees every key the parser created (own properties, `__proto__` included).
    return JSON.parse(text, refuseReserved);
  } catch (e) {
    if (e instanceof JsonRefusal) throw e;
    // The engine's SyntaxError quotes the input: never pass it on.
    throw new JsonRefusal('syntax', 'the request body is not valid JSON');
  }
}

/** True for `application/json` and any `application/<x>+json`, parameters and case aside. */
export function isJsonMediaType(contentType: string | null | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}
