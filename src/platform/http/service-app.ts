// The stack every service app starts from, built once: its error model (envelope or problem+json,
// installed first so it renders everything below), the OpenAPI description at /openapi(.json) and
// the /health and /version probes. A service adds its own routes to what this returns.
import { Elysia } from 'elysia';
import type { ErrorTable } from '../errors';
import type { ServiceDeps } from '../service';
import { ErrorEnvelope, errorHandling, ProblemSchema, type ErrorStyle, type StreamedBodies } from './errors';
import { HealthSchema, healthRoutes, VersionSchema } from './health';
import { nameModels, openapiDocs } from './openapi';

export interface ServiceAppOptions {
  /** The service's name: component of /version, and the plugin's seed (one per app, deduplicated). */
  name: string;
  style: ErrorStyle;
  /** The service's error table (`<service>.errors.ts`): what each code means, for responses and the document. */
  errors: ErrorTable;
  /** The service's exported t.* schemas (`import * as`): named components of the document, by export name. */
  models?: Record<string, unknown>[];
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
  // The error shapes first: the shapes that carry one (a stream's error event) refer to it.
  for (const models of [{ ErrorEnvelope, Problem: ProblemSchema, Health: HealthSchema, Version: VersionSchema }, ...(opts.models ?? [])]) nameModels(models);
  const app = new Elysia({ name: 'platform.service-app', seed: opts.name }).use(
    errorHandling(opts.style, { production: deps.config.production, errors: opts.errors, log: deps.log, streamedBodies: opts.streamedBodies }),
  );
  return app
    .use(
      openapiDocs(() => app, {
        title: opts.title,
        description: opts.description,
        style: opts.style,
        errors: opts.errors,
        dottedPaths: opts.dottedPaths,
        tags: [...(opts.tags ?? []), { name: 'probes', description: 'Health and version' }],
      }),
    )
    .use(healthRoutes(opts.name, deps.clock, deps.config.build));
}
