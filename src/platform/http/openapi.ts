// The OpenAPI 3.0 description at /openapi.json and its interactive reference at /openapi.
import { openapi } from '@elysiajs/openapi';
import { VERSION } from './health';

export function openapiDocs(opts: {
  title: string;
  description: string;
  component: string;
  tags?: { name: string; description: string }[];
  /** The plugin hides paths with a dot as static files; true keeps them (e.g. /.well-known/jwks.json). */
  dottedPaths?: boolean;
}) {
  return openapi({
    path: '/openapi',
    specPath: '/openapi.json',
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
}
