// Composition root of the sources service.
import type { Service, ServiceDeps } from '../../platform/service';
import { createSourcesApp } from './sources.routes';

export function createSourcesService(deps: ServiceDeps): Service {
  return { app: createSourcesApp(deps) };
}
