// The built-in templates feature: GET /api/templates (built-ins with the caller's and public ones).
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { createTemplatesService, type TemplatesService } from './templates.service';
import { templatesRoutes } from './templates.routes';
import * as models from './templates.model';

export function createImagesFeature(deps: Parameters<typeof createTemplatesService>[0] & { auth: WorkspaceAuthPlugin }): Feature<TemplatesService> {
  const templates = createTemplatesService(deps);
  return { service: templates, routes: templatesRoutes({ auth: deps.auth, templates }), models: [models] };
}
