// Composition root of the workspaces service. (Scaffold: replaced by the workspaces issue's work.)
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import type { Service, ServiceDeps } from '../../platform/service';

export function createWorkspacesService(deps: ServiceDeps): Service {
  return { app: new Elysia().use(errorHandling('problem', { production: deps.config.production, log: deps.log })).use(healthRoutes('workspaces')) };
}
