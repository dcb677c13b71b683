// The files feature: a workspace's files, streamed both ways (/api/workspaces/{id}/files/...).
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { createFilesService, type FilesService } from './files.service';
import { filesRoutes } from './files.routes';
import * as models from './files.model';

export function createFilesFeature(deps: Parameters<typeof createFilesService>[0] & { auth: WorkspaceAuthPlugin }): Feature<FilesService> {
  const files = createFilesService(deps);
  return { service: files, routes: filesRoutes({ auth: deps.auth, files }), models: [models] };
}
