// The exec feature: commands in a workspace (POST /api/workspaces/{id}/exec), answered whole or streamed.
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { createExecService, type ExecService } from './exec.service';
import { execRoutes } from './exec.routes';
import * as models from './exec.model';

export function createExecFeature(deps: Parameters<typeof createExecService>[0] & { auth: WorkspaceAuthPlugin; sse: Sse }): Feature<ExecService> {
  const exec = createExecService(deps);
  return { service: exec, routes: execRoutes({ auth: deps.auth, exec, sse: deps.sse }), models: [models] };
}
