// Elysia cleans a body against its schema before it checks it (exact-mirror), and the cleaning
// rebuilds an object from the properties the schema declares: a value that is not an object
// (`false`, `"x"`, `[]`, `null`) where the schema wants an object whose fields are all optional, or a
// record, becomes `{}` and passes. `strictObjects(schema)` is a route's `transform` hook (it runs
// before that cleaning) that answers 400 INVALID_REQUEST, as a failed check would, for such a value.
import type { TSchema } from '@sinclair/typebox';
import { EnvelopeErrors } from '../platform.errors';

type Node = { type?: unknown; properties?: Record<string, Node>; items?: Node; patternProperties?: Record<string, Node> };

const isPlainObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON pointer of the first value that the schema wants an object for and is not one; null when there is none. */
export function nonObjectAt(schema: TSchema, value: unknown, at = ''): string | null {
  const s = schema as Node;
  if (value === undefined) return null;
  if (s.type === 'object') {
    if (!isPlainObject(value)) return at || '/';
    const v = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(s.properties ?? {})) {
      const found = nonObjectAt(child as TSchema, v[key], `${at}/${key}`);
      if (found) return found;
    }
    // A record's values: the pointer stops at the record (its keys were written by the client).
    for (const child of Object.values(s.patternProperties ?? {})) {
      for (const item of Object.values(v)) if (nonObjectAt(child as TSchema, item, at)) return at || '/';
    }
    return null;
  }
  if (s.type === 'array' && s.items && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nonObjectAt(s.items as TSchema, value[i], `${at}/${i}`);
      if (found) return found;
    }
  }
  return null;
}

/** A `transform` hook refusing a body whose objects are not objects (see above), in the shape of a failed validation. */
export function strictObjects(schema: TSchema) {
  return ({ body }: { body: unknown }) => {
    const at = nonObjectAt(schema, body);
    if (at === null) return;
    throw EnvelopeErrors.INVALID_REQUEST(`invalid body: ${at} Expected object`, { errors: [{ in: 'body', property: at, detail: 'Expected object' }] });
  };
}
