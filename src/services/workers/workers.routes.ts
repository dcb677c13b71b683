// The workers service over HTTP: today only its probes (media spec); its work happens on the bus.
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import { openapiDocs } from '../../platform/http/openapi';
import type { ServiceDeps } from '../../platform/service';

export function createWorkersApp(deps: ServiceDeps) {
  return new Elysia()
    .use(errorHandling('problem', { production: deps.config.production, log: deps.log }))
    .use(
      openapiDocs({
        title: 'Keel workers',
        component: 'workers',
        description: 'Background jobs (library scans) run from the bus; over HTTP only its probes. Errors are RFC 9457 problem+json.',
        tags: [{ name: 'probes', description: 'Health and version' }],
      }),
    )
    .use(healthRoutes('workers'));
}
