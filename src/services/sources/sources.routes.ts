// The sources service over HTTP: only its probes (media spec); resolution is on the bus (qry.sources.resolve).
import { createServiceApp } from '../../platform/http/service-app';
import type { ServiceDeps } from '../../platform/service';
import { sourcesErrors } from './sources.errors';

export function createSourcesApp(deps: ServiceDeps) {
  return createServiceApp(deps, {
    name: 'sources',
    style: 'problem',
    errors: sourcesErrors,
    title: 'Keel sources service',
    description: 'Keel sources: where the bytes of an asset can be read. Its work happens on the bus; over HTTP it answers its probes. Errors are RFC 9457 problem+json.',
  });
}
