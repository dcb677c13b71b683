// Composition root of the identity service. (Scaffold: replaced by the identity issue's work.)
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import type { Service, ServiceDeps } from '../../platform/service';

export function createIdentityService(deps: ServiceDeps): Service {
  return { app: new Elysia().use(errorHandling('problem', { production: deps.config.production, log: deps.log })).use(healthRoutes('identity')) };
}
