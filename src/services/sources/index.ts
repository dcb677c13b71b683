// Composition root of the sources service.
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createSourcesApp } from './sources.routes';

export function createSourcesService(deps: ServiceDeps): Service {
  return { app: createSourcesApp(deps) };
}

/** No variables of its own yet. */
export const sourcesService = defineService({ loadConfig: () => ({}), create: createSourcesService });
