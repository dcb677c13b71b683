// The rewrites that turn what Elysia's OpenAPI plugin emits (TypeBox's JSON Schema, draft 7) into an
// OpenAPI 3.0 document generators read well: 3.0 schema objects, named components referenced with
// `$ref`, and an example on every body. Pure functions over a plain copy of the document.
import type { TSchema } from 'elysia';

export type Schema = Record<string, unknown>;
/** `x-event-schema`: what each event of a text/event-stream carries (OpenAPI 3.0 has no place for it). */
export type Content = Record<string, { schema?: Schema; example?: unknown; 'x-event-schema'?: Schema } & Schema>;
export type Response = { description?: string; content?: Content } & Schema;
export type Operation = Schema & {
  operationId?: string;
  parameters?: Schema[];
  requestBody?: { content?: Content } & Schema;
  responses?: Record<string, Response>;
  security?: unknown[];
};
export interface Document extends Schema {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> } & Schema;
}

export const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNullSchema = (v: unknown) => isObject(v) && v.type === 'null';

/** Every operation of a document, with its path and method. */
export function operationsOf(doc: Document): { path: string; method: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([, op]) => isObject(op)).map(([method, op]) => ({ path, method, op })),
  );
}

/**
 * Rewrites, in place, the JSON Schema (draft 7) that TypeBox emits into OpenAPI 3.0 schema objects,
 * which code generators and validators (swagger-parser, openapi-typescript) read: `const` becomes a
 * one-value `enum`, a `null` branch of anyOf/oneOf becomes `nullable: true`, `patternProperties`
 * (t.Record) becomes `additionalProperties`, JSON Schema's `examples` becomes `example`.
 */
export function toOpenApi30Schema(schema: Schema): Schema {
  if ('const' in schema) {
    const value = schema.const;
    delete schema.const;
    schema.enum = [value];
    if (schema.type === undefined && value !== null) schema.type = typeof value === 'number' ? 'number' : typeof value;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (!Array.isArray(branches) || !branches.some(isNullSchema)) continue;
    const rest = branches.filter((b) => !isNullSchema(b));
    schema.nullable = true;
    if (rest.length === 1 && isObject(rest[0])) {
      delete schema[key];
      Object.assign(schema, rest[0], { nullable: true, ...(schema.description ? { description: schema.description } : {}) });
    } else schema[key] = rest;
  }
  if (isObject(schema.patternProperties)) {
    const [value] = Object.values(schema.patternProperties);
    delete schema.patternProperties;
    schema.additionalProperties = isObject(value) ? value : true;
  }
  if (Array.isArray(schema.examples)) {
    if (schema.example === undefined && schema.examples.length > 0) schema.example = schema.examples[0];
    delete schema.examples;
  }
  for (const [key, value] of Object.entries(schema)) {
    // `properties` and the like hold schemas by name; `example`/`default`/`enum` hold data, left alone.
    if (key === 'example' || key === 'default' || key === 'enum') continue;
    if (Array.isArray(value)) value.forEach((v) => isObject(v) && toOpenApi30Schema(v));
    else if (isObject(value)) toOpenApi30Schema(value);
  }
  return schema;
}

/** Applies toOpenApi30Schema to every schema of the document: components, parameters, bodies, responses. */
export function normalizeSchemas(doc: Document) {
  for (const s of Object.values(doc.components?.schemas ?? {})) toOpenApi30Schema(s);
  for (const { op } of operationsOf(doc)) {
    for (const param of op.parameters ?? []) if (isObject(param.schema)) toOpenApi30Schema(param.schema);
    for (const body of [op.requestBody, ...Object.values(op.responses ?? {})]) {
      if (!isObject(body) || !isObject(body.content)) continue;
      // t.Undefined (a 204) comes out as a schema where the media map belongs: no content at all.
      if (typeof body.content.type === 'string') {
        if (body.content.type === 'undefined') delete body.content;
        else body.content = { 'application/json': { schema: body.content as Schema } };
        if (!body.content) continue;
      }
      const content = body.content as Content;
      for (const [type, media] of Object.entries(content)) {
        if (!isObject(media) || !isObject(media.schema)) continue;
        if (media.schema.type === 'undefined') delete content[type];
        else toOpenApi30Schema(media.schema);
        if (isObject(media['x-event-schema'])) toOpenApi30Schema(media['x-event-schema']);
      }
      if (Object.keys(content).length === 0) delete body.content;
    }
  }
}

/** The key a named model carries (set by nameModels) until the document moves it to components. */
const COMPONENT = 'x-keel-component';

/**
 * Names the TypeBox schemas a service exports from its *.model.ts files after their export names
 * (`WorkspaceSchema` becomes `Workspace`): the document lists each once under components.schemas and
 * refers to it with `$ref`. The name is an extension keyword, which validation ignores; the first
 * name given to a schema stays.
 */
export function nameModels(models: Record<string, unknown>) {
  for (const [exported, value] of Object.entries(models)) {
    if (!isObject(value) || !(Symbol.for('TypeBox.Kind') in value) || COMPONENT in value) continue;
    const schema = value as TSchema;
    if (!isObject(schema.properties) && schema.type !== 'array' && !Array.isArray(schema.anyOf)) continue;
    (value as Schema)[COMPONENT] = exported.replace(/Schema$/, '');
  }
}

/**
 * Moves every named schema of the document into components.schemas and puts a `$ref` where it was,
 * innermost first, so that a list of workspaces refers to Workspace. Two shapes that claim the same
 * name keep the first; the others stay inline.
 */
export function extractComponents(doc: Document) {
  const schemas = ((doc.components ??= {}).schemas ??= {});
  const canonical = new Map<string, string>();
  // `lenient` (event schemas, which are documentation only): a model already listed under its name
  // is referred to even where its rendering differs (the plugin inlines sub-models of a response's
  // copy that the raw event schema still names: LogEntry's LogLevel), so that LogEvent's data is LogEntry.
  const visit = (value: unknown, lenient = false): unknown => {
    if (Array.isArray(value)) return value.map((v) => visit(v, lenient));
    if (!isObject(value)) return value;
    for (const [k, v] of Object.entries(value)) if (k !== 'example' && k !== 'default' && k !== 'enum') value[k] = visit(v, lenient);
    const name = value[COMPONENT];
    if (typeof name !== 'string') return value;
    delete value[COMPONENT];
    const text = JSON.stringify(value);
    const known = canonical.get(name);
    if (known === undefined && !schemas[name]) {
      canonical.set(name, text);
      schemas[name] = value;
    } else if (known !== text && !(lenient && schemas[name])) return value;
    return { $ref: `#/components/schemas/${name}` };
  };
  const events: { media: Record<string, unknown> }[] = [];
  for (const { op } of operationsOf(doc)) {
    for (const body of [op.requestBody, ...Object.values(op.responses ?? {})]) {
      for (const media of Object.values(body?.content ?? {})) {
        if (isObject(media.schema)) media.schema = visit(media.schema) as Schema;
        if (isObject(media['x-event-schema'])) events.push({ media });
      }
    }
    for (const param of op.parameters ?? []) if (isObject(param.schema)) param.schema = visit(param.schema) as Schema;
  }
  // Event schemas last: by then every model a response uses is listed.
  for (const { media } of events) media['x-event-schema'] = visit(media['x-event-schema'], true) as Schema;
}

const MAX_EXAMPLE_DEPTH = 8;

/**
 * A plausible value of `schema`: its own example, default or first enum value, else one built from
 * its properties and items (strings by format). Components are followed through `$ref`.
 */
export function exampleOf(schema: unknown, doc: Document, depth = 0): unknown {
  if (!isObject(schema) || depth > MAX_EXAMPLE_DEPTH) return null;
  if (typeof schema.$ref === 'string') return exampleOf(doc.components?.schemas?.[schema.$ref.split('/').at(-1)!], doc, depth + 1);
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) return exampleOf(branches[0], doc, depth + 1);
  }
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      for (const [name, prop] of Object.entries(isObject(schema.properties) ? schema.properties : {})) {
        if (required.has(name) || depth < 2) out[name] = exampleOf(prop, doc, depth + 1);
      }
      return out;
    }
    case 'array':
      return schema.items ? [exampleOf(schema.items, doc, depth + 1)] : [];
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return false;
    case 'string':
      if (schema.format === 'date-time') return '2026-01-01T00:00:00.000Z';
      if (schema.format === 'uri') return 'https://example.com/';
      return typeof schema.minLength === 'number' && schema.minLength > 0 ? 'x'.repeat(Math.min(schema.minLength, 8)) : 'string';
    default:
      return null;
  }
}

/** Gives every JSON request and response body of the document an `example` where it has none. */
export function addExamples(doc: Document) {
  for (const { op } of operationsOf(doc)) {
    for (const body of [op.requestBody, ...Object.values(op.responses ?? {})]) {
      for (const [type, media] of Object.entries(body?.content ?? {})) {
        if (!type.includes('json') || !isObject(media.schema) || media.example !== undefined || media.examples !== undefined) continue;
        media.example = exampleOf(media.schema, doc);
      }
    }
  }
}
