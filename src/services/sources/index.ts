// Composition root of the sources service, one feature (platform/feature.ts): bindings kept from the
// catalog's events, resolution on the bus.
import { createServiceApp } from '../../platform/http/service-app';
import { featuresLifetime, type Feature } from '../../platform/feature';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { sourcesErrorTable } from './sources.errors';
import { createSources } from './sources.service';

export function createSourcesService(deps: ServiceDeps): Service {
  const sources = createSources({ store: deps.store, clock: deps.clock });
  // Its work happens on the bus (qry.sources.resolve): over HTTP it answers only its probes (media spec).
  const app = createServiceApp(deps, {
    name: 'sources',
    style: 'problem',
    errors: sourcesErrorTable,
    title: 'Keel sources service',
    description: 'Keel sources: where the bytes of an asset can be read. Its work happens on the bus; over HTTP it answers its probes. Errors are RFC 9457 problem+json.',
  });
  const features: Feature[] = [{ service: sources, listen: (bus) => sources.listen(bus) }];
  return { app, ...featuresLifetime(features, deps.bus) };
}

/** No variables of its own yet. */
export const sourcesService = defineService({ loadConfig: () => ({}), create: createSourcesService });
