// The OpenAPI 3.0 description at /openapi.json and its interactive reference at /openapi (reference-ui.ts).
import { openapi } from '@elysiajs/openapi';
import { Elysia, type InternalRoute } from 'elysia';
import { VERSION } from './health';
import { referenceUi } from './reference-ui';

type Content = Record<string, unknown>;
type Responses = Record<string, { content?: Content } & Record<string, unknown>>;
interface Document {
  paths: Record<string, Record<string, { responses?: Responses }>>;
}

/**
 * The plugin builds each operation's `responses` from the route's `response` schemas and drops the
 * route's `detail.responses`. This puts what a route declares there back, its content types next to
 * the generated ones (e.g. text/event-stream beside the JSON schema of the same status).
 */
function addDetailResponses(doc: Document, routes: InternalRoute[]) {
  for (const route of routes) {
    const declared = (route.hooks?.detail as { responses?: Responses } | undefined)?.responses;
    const op = declared && doc.paths[route.path.replace(/:([^/]+)/g, '{$1}')]?.[route.method.toLowerCase()];
    if (!op) continue;
    op.responses ??= {};
    for (const [status, response] of Object.entries(declared)) {
      const generated = op.responses[status];
      op.responses[status] = { ...generated, ...response, content: { ...generated?.content, ...response.content } };
    }
  }
}

type Schema = Record<string, unknown>;

/**
 * The plugin lists a request body's media types from the route's named parsers; the hardened JSON
 * parser (platform/http/errors.ts) is a function, so the list comes out empty. Every body is read by
 * that parser, so each body is `application/json` with the route's schema.
 */
function addJsonRequestBodies(doc: Document, routes: InternalRoute[]) {
  for (const route of routes) {
    const body = route.hooks?.body as Schema | undefined;
    const op = body && (doc.paths[route.path.replace(/:([^/]+)/g, '{$1}')]?.[route.method.toLowerCase()] as Schema | undefined);
    if (!op) continue;
    const requestBody = (op.requestBody ??= { required: true }) as { content?: Content };
    if (requestBody.content && Object.keys(requestBody.content).length > 0) continue;
    requestBody.content = { 'application/json': { schema: JSON.parse(JSON.stringify(body)) } };
  }
}

const PARSE_REFUSAL =
  'The body was refused before validation: not JSON, nested deeper than 32 levels, or using a reserved key ' +
  '(`__proto__`, `constructor`, `prototype`); see docs/api-hardening.md.';

/**
 * Every operation that takes a body can answer 400 from the hardened parser. Where a route does not
 * declare a 400 itself, one is added with the route's own error schema (that of its first 4xx).
 */
function addParseRefusals(doc: Document) {
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item) as (Schema & { responses?: Responses })[]) {
      if (!isObject(op) || !op.requestBody || !op.responses || op.responses['400']) continue;
      const errorStatus = Object.keys(op.responses).find((s) => s.startsWith('4'));
      if (!errorStatus) continue;
      op.responses['400'] = { description: PARSE_REFUSAL, content: op.responses[errorStatus]!.content };
    }
  }
}
const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNullSchema = (v: unknown) => isObject(v) && v.type === 'null';

/**
 * Rewrites, in place, the JSON Schema (draft 7) that TypeBox emits into OpenAPI 3.0 schema objects,
 * which code generators and validators (swagger-parser, openapi-typescript) read: `const` becomes a
 * one-value `enum`, a `null` branch of anyOf/oneOf becomes `nullable: true`, `patternProperties`
 * (t.Record) becomes `additionalProperties`, and `type: 'undefined'` (t.Undefined, an empty body)
 * loses its schema. Idempotent: the plugin caches the document and this runs on each read.
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
  for (const [key, value] of Object.entries(schema)) {
    // `properties` and the like hold schemas by name; `example`/`default`/`enum` hold data, left alone.
    if (key === 'example' || key === 'default' || key === 'enum') continue;
    if (Array.isArray(value)) value.forEach((v) => isObject(v) && toOpenApi30Schema(v));
    else if (isObject(value)) toOpenApi30Schema(value);
  }
  return schema;
}

/** Applies toOpenApi30Schema to every schema of the document: components, parameters, bodies, responses. */
function normalizeSchemas(doc: Document) {
  const components = (doc as { components?: { schemas?: Record<string, Schema> } }).components;
  for (const s of Object.values(components?.schemas ?? {})) toOpenApi30Schema(s);
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item) as Schema[]) {
      if (!isObject(op)) continue;
      for (const param of (op.parameters as Schema[] | undefined) ?? []) if (isObject(param.schema)) toOpenApi30Schema(param.schema);
      const bodies = [op.requestBody, ...Object.values((op.responses as Responses | undefined) ?? {})];
      for (const body of bodies) {
        if (!isObject(body) || !isObject(body.content)) continue;
        // t.Undefined (a 204) comes out as a schema where the media map belongs: no content at all.
        if (typeof body.content.type === 'string') {
          if (body.content.type === 'undefined') delete body.content;
          else body.content = { 'application/json': { schema: body.content } };
          if (!body.content) continue;
        }
        const content = body.content as Record<string, unknown>;
        for (const [type, media] of Object.entries(content)) {
          if (!isObject(media) || !isObject(media.schema)) continue;
          if (media.schema.type === 'undefined') delete content[type];
          else toOpenApi30Schema(media.schema);
        }
        if (Object.keys(content).length === 0) delete body.content;
      }
    }
  }
}

export function openapiDocs(opts: {
  title: string;
  description: string;
  component: string;
  tags?: { name: string; description: string }[];
  /** The plugin hides paths with a dot as static files; true keeps them (e.g. /.well-known/jwks.json). */
  dottedPaths?: boolean;
}) {
  const specPath = '/openapi.json';
  const docs = openapi({
    path: '/openapi',
    specPath,
    // The page is Keel's own (reference-ui.ts): the plugin's loads its script from a CDN.
    provider: null,
    openapiVersion: '3.0.3',
    exclude: { staticFile: !opts.dottedPaths },
    documentation: {
      info: { title: opts.title, version: VERSION, description: opts.description },
      tags: opts.tags,
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
      security: [{ bearer: [] }],
    },
  });
  // The routes of the whole app, as the plugin reads them: `use` rebinds getGlobalRoutes to the root's
  // (Elysia types it protected).
  const routes = () => (docs as unknown as { getGlobalRoutes(): InternalRoute[] }).getGlobalRoutes();
  // A local hook before `use` applies to the plugin's two routes only. The plugin caches its
  // document, and adding the same responses again changes nothing.
  return new Elysia()
    .onAfterHandle(({ path, responseValue }) => {
      if (path !== specPath) return;
      addDetailResponses(responseValue as Document, routes());
      addJsonRequestBodies(responseValue as Document, routes());
      addParseRefusals(responseValue as Document);
      normalizeSchemas(responseValue as Document);
    })
    .use(docs)
    .use(referenceUi({ title: opts.title, specPath }));
}
