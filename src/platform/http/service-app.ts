// The stack every service app starts from, built once: its error model (envelope or problem+json,
// installed first so it renders everything below), the OpenAPI description at /openapi(.json) and
// the /health and /version probes. A service adds its own routes to what this returns.
import { Elysia } from 'elysia';
import type { ServiceDeps } from '../service';
import { errorHandling, type ErrorStyle, type StreamedBodies } from './errors';
import { healthRoutes } from './health';
import { openapiDocs } from './openapi';

export interface ServiceAppOptions {
  /** The service's name: component of /version, and the plugin's seed (one per app, deduplicated). */
  name: string;
  style: ErrorStyle;
  title: string;
  description: string;
  tags?: { name: string; description: string }[];
  /** The OpenAPI plugin hides dotted paths as static files; true keeps them (e.g. /.well-known/jwks.json). */
  dottedPaths?: boolean;
  /** Requests whose body the route streams and limits itself (see errors.ts). */
  streamedBodies?: StreamedBodies;
}

/** `deps` gives the production switch (error detail), the logger (unexpected errors) and the clock (/health). */
export function createServiceApp(deps: Pick<ServiceDeps, 'config' | 'log' | 'clock'>, opts: ServiceAppOptions) {
  return new Elysia({ name: 'platform.service-app', seed: opts.name })
    .use(errorHandling(opts.style, { production: deps.config.production, log: deps.log, streamedBodies: opts.streamedBodies }))
    .use(
      openapiDocs({
        title: opts.title,
        description: opts.description,
        component: opts.name,
        dottedPaths: opts.dottedPaths,
        tags: [...(opts.tags ?? []), { name: 'probes', description: 'Health and version' }],
      }),
    )
    .use(healthRoutes(opts.name, deps.clock, deps.config.build));
}
