// The workers service over HTTP: only its probes (media spec); jobs arrive and report on the bus.
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import type { ServiceDeps } from '../../platform/service';

export function createWorkersApp(deps: ServiceDeps) {
  return new Elysia()
    .use(errorHandling('problem', { production: deps.config.production, log: deps.log }))
    .use(healthRoutes('workers'));
}
