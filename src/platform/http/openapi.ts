// The OpenAPI 3.0 description at /openapi.json and its interactive reference at /openapi
// (reference-ui.ts). The document is built once, from the app's routes, the first time it is asked
// for (every route is registered by then): Elysia's generator (toOpenAPISchema) reads the routes and
// their t.* schemas, then the rewrites below make it a document SDK generators love: OpenAPI 3.0
// schema objects, named components behind `$ref`, each operation's error codes as enums from the
// service's error table, and an example on every body.
import { Elysia, type AnyElysia, type InternalRoute } from 'elysia';
import type { ErrorTable } from '../errors';
import { ErrorEnvelope, ProblemSchema, type ErrorStyle } from './errors';
import { VERSION } from './health';
import { addErrorResponses, errorComponent } from './openapi-errors';
import { addExamples, extractComponents, normalizeSchemas, operationsOf, type Content, type Document, type Operation, type Response, type Schema } from './openapi-schemas';
import { referenceUi } from './reference-ui';

export { toOpenApi30Schema, nameModels } from './openapi-schemas';
export { operation, operationsFor } from './openapi-errors';

const openapiPath = (path: string) => path.replace(/:([^/]+)/g, '{$1}');

/**
 * The generator builds each operation's `responses` from the route's `response` schemas and drops the
 * route's `detail.responses`. This puts what a route declares there back, its content types next to
 * the generated ones (e.g. text/event-stream beside the JSON schema of the same status).
 */
function addDetailResponses(doc: Document, routes: InternalRoute[]) {
  for (const route of routes) {
    const declared = (route.hooks?.detail as { responses?: Record<string, Response> } | undefined)?.responses;
    const op = declared && doc.paths[openapiPath(route.path)]?.[route.method.toLowerCase()];
    if (!op) continue;
    op.responses ??= {};
    for (const [status, response] of Object.entries(declared)) {
      const generated = op.responses[status];
      // A copy: the rewrites work in place, and a stream's event schema is made of live t.* schemas.
      const copy = JSON.parse(JSON.stringify(response)) as Response;
      op.responses[status] = { ...generated, ...copy, content: { ...generated?.content, ...copy.content } as Content };
    }
  }
}

/**
 * The generator lists a request body's media types from the route's named parsers; the hardened JSON
 * parser (platform/http/errors.ts) is a function, so the list comes out empty. Every body is read by
 * that parser, so each body is `application/json` with the route's schema.
 */
function addJsonRequestBodies(doc: Document, routes: InternalRoute[]) {
  for (const route of routes) {
    const body = route.hooks?.body as Schema | undefined;
    const op = body && doc.paths[openapiPath(route.path)]?.[route.method.toLowerCase()];
    if (!op) continue;
    const requestBody = (op.requestBody ??= { required: true });
    if (requestBody.content && Object.keys(requestBody.content).length > 0) continue;
    requestBody.content = { 'application/json': { schema: JSON.parse(JSON.stringify(body)) } };
  }
}

/**
 * Every operation needs an explicit operationId (`operation(id, codes)`): SDK method names must not
 * change when a path does. One without keeps the generator's path-derived id, flagged for review;
 * tests/platform/openapi.test.ts holds the list of ids and fails on it.
 */
function flagImplicitOperationIds(doc: Document, explicit: Set<string>) {
  for (const { op } of operationsOf(doc)) if (!op.operationId || !explicit.has(op.operationId)) op['x-keel-implicit-operation-id'] = true;
}

/**
 * The generator lists an Elysia `.ws` route under the method `ws`, which OpenAPI has not: it is the
 * GET that a WebSocket upgrade is, answering 101. Such a route authorises itself (a ticket in its
 * query), so it declares no Bearer security.
 */
function webSocketsAsGet(doc: Document) {
  for (const item of Object.values(doc.paths) as Record<string, Operation>[]) {
    const op = item.ws;
    if (!op) continue;
    delete item.ws;
    op.responses = { 101: { description: 'Switching Protocols: the connection is now the WebSocket' }, ...op.responses };
    op.security = [];
    item.get = op;
  }
}

export interface OpenapiOptions {
  title: string;
  description: string;
  style: ErrorStyle;
  /** The service's error table (`<service>.errors.ts`): each operation's error codes become enums. */
  errors: ErrorTable;
  tags?: { name: string; description: string }[];
  /** The generator hides paths with a dot as static files; true keeps them (e.g. /.well-known/jwks.json). */
  dottedPaths?: boolean;
}

/** Builds the whole document of `app` from its routes. */
export async function buildDocument(app: AnyElysia, opts: OpenapiOptions): Promise<Document> {
  // The generator (~15 MB resident, ~0.1 s to load) is loaded by the first request of a document.
  const { toOpenAPISchema } = await import('@elysiajs/openapi');
  const generated = toOpenAPISchema(app, { staticFile: !opts.dottedPaths }, undefined, undefined, '3.0.3');
  // A plain copy: the rewrites below work in place and must never touch the live t.* schemas.
  const doc = JSON.parse(
    JSON.stringify({
      openapi: '3.0.3',
      info: { title: opts.title, version: VERSION, description: opts.description },
      tags: opts.tags,
      security: [{ bearer: [] }],
      paths: generated.paths,
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        schemas: generated.components.schemas ?? {},
      },
    }),
  ) as Document;
  webSocketsAsGet(doc);
  const routes = app.routes;
  flagImplicitOperationIds(doc, new Set(routes.map((r) => (r.hooks?.detail as { operationId?: string } | undefined)?.operationId).filter((id): id is string => !!id)));
  addDetailResponses(doc, routes);
  addJsonRequestBodies(doc, routes);
  normalizeSchemas(doc);
  extractComponents(doc);
  errorComponent(doc, opts.style, opts.style === 'envelope' ? ErrorEnvelope : ProblemSchema);
  normalizeSchemas(doc);
  addErrorResponses(doc, opts.style, opts.errors);
  addExamples(doc);
  return doc;
}

/**
 * GET /openapi.json (the document of `app`, built on the first request and then served as built)
 * and the reference page at /openapi. `app` is the service's root app: routes added to it after this
 * plugin are in the document.
 */
export function openapiDocs(app: () => AnyElysia, opts: OpenapiOptions) {
  const specPath = '/openapi.json';
  let document: Promise<string> | undefined;
  return new Elysia({ name: 'platform.openapi', seed: opts.title })
    .get(
      specPath,
      async () => {
        document ??= buildDocument(app(), opts).then(
          (doc) => JSON.stringify(doc),
          (e) => {
            document = undefined; // the next request tries again
            throw e;
          },
        );
        return new Response(await document, { headers: { 'content-type': 'application/json' } });
      },
      { detail: { hide: true } },
    )
    .use(referenceUi({ title: opts.title, specPath }));
}
