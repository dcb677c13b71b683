// The processes feature: commands that outlive their request (output kept and followed, stdin, signals).
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { Logger } from '../../../platform/runtime';
import { createProcessesService, type ProcessesService } from './processes.service';
import { processesRoutes } from './processes.routes';
import * as models from './processes.model';

export function createProcessesFeature(deps: Parameters<typeof createProcessesService>[0] & { auth: WorkspaceAuthPlugin; sse: Sse; log: Logger }): Feature<ProcessesService> {
  const processes = createProcessesService(deps);
  return {
    service: processes,
    routes: processesRoutes({ auth: deps.auth, processes, sse: deps.sse }),
    models: [models],
    // Processes a previous run followed are no longer followed: visibly lost, never "running".
    async start() {
      const lost = await processes.markLost();
      if (lost) deps.log.info('processes of a previous run marked lost', { count: lost });
    },
    stop: () => processes.close(),
  };
}
