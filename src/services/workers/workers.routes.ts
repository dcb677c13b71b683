// The workers service over HTTP: today only its probes (media spec); its work happens on the bus.
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import type { ServiceDeps } from '../../platform/service';

export function createWorkersApp(deps: ServiceDeps) {
  return new Elysia()
    .use(errorHandling('problem', { production: deps.config.production, log: deps.log }))
    .use(healthRoutes('workers'));
}
