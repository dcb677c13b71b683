// The sources service over HTTP: only its probes (media spec); resolution is on the bus (qry.sources.resolve).
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import type { ServiceDeps } from '../../platform/service';

export function createSourcesApp(deps: ServiceDeps) {
  return new Elysia()
    .use(errorHandling('problem', { production: deps.config.production, log: deps.log }))
    .use(healthRoutes('sources'));
}
