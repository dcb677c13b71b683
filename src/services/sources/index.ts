// Composition root of the sources service: bindings kept from the catalog's events, resolution on the bus.
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createSourcesApp } from './sources.routes';
import { createSources } from './sources.service';

export function createSourcesService(deps: ServiceDeps): Service {
  const sources = createSources({ db: deps.db, clock: deps.clock });
  let stop = () => {};
  return {
    app: createSourcesApp(deps),
    start: () => void (stop = sources.listen(deps.bus)),
    stop: () => stop(),
  };
}

/** No variables of its own yet. */
export const sourcesService = defineService({ loadConfig: () => ({}), create: createSourcesService });
