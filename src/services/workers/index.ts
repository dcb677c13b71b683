// Composition root of the workers service.
import type { Service, ServiceDeps } from '../../platform/service';
import { createWorkersApp } from './workers.routes';

export function createWorkersService(deps: ServiceDeps): Service {
  return { app: createWorkersApp(deps) };
}
