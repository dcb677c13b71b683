// The volumes feature: volumes kept by deletes (/api/volumes), counted against APP_QUOTA_VOLUMES.
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { createVolumes, type Volumes } from './volumes.service';
import { volumesRoutes } from './volumes.routes';
import * as models from './volumes.model';

export function createVolumesFeature(deps: Parameters<typeof createVolumes>[0] & { auth: WorkspaceAuthPlugin }): Feature<Volumes> {
  const volumes = createVolumes(deps);
  return { service: volumes, routes: volumesRoutes({ auth: deps.auth, volumes }), models: [models] };
}
