// The OpenAPI 3.0 description at /openapi.json and its interactive reference at /openapi.
import { openapi } from '@elysiajs/openapi';
import { Elysia, type InternalRoute } from 'elysia';
import { VERSION } from './health';

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
      if (path === specPath) addDetailResponses(responseValue as Document, routes());
    })
    .use(docs);
}
