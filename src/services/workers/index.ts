// Composition root of the workers service.
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createWorkersApp } from './workers.routes';

export function createWorkersService(deps: ServiceDeps): Service {
  return { app: createWorkersApp(deps) };
}

/** No variables of its own yet. */
export const workersService = defineService({ loadConfig: () => ({}), create: createWorkersService });
