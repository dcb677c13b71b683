// The usage feature: what each actor spent (GET /api/usage): tokens, command time, running time.
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { createUsage, type Usage, type UsageDeps } from './usage.service';
import { usageRoutes } from './usage.routes';
import * as models from './usage.model';

export function createUsageFeature(deps: UsageDeps & { auth: WorkspaceAuthPlugin }): Feature<Usage> {
  const usage = createUsage(deps);
  return { service: usage, routes: usageRoutes({ auth: deps.auth, usage }), models: [models] };
}
