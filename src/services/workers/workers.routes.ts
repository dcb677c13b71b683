// The workers service over HTTP: only its probes (media spec); jobs arrive and report on the bus.
import { createServiceApp } from '../../platform/http/service-app';
import type { ServiceDeps } from '../../platform/service';
import { workersErrors } from './workers.errors';

export function createWorkersApp(deps: ServiceDeps) {
  return createServiceApp(deps, {
    name: 'workers',
    style: 'problem',
    errors: workersErrors,
    title: 'Keel workers service',
    description: 'Keel workers: background jobs of the media services. Its work happens on the bus; over HTTP it answers its probes. Errors are RFC 9457 problem+json.',
  });
}
