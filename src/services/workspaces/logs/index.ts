// The logs feature: a workspace's logs read back from its engine, tailed or followed (logs.hub.ts
// keeps one engine stream per followed workspace and learns from the workspaces' events).
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { Clock, Logger } from '../../../platform/runtime';
import type { Access } from '../access';
import type { Engine } from '../engine/engine';
import type { ExecService } from '../exec/exec.service';
import type { Quotas } from '../quotas';
import { createLogHub } from './logs.hub';
import { createLogsService, type LogsService } from './logs.service';
import { logsRoutes } from './logs.routes';
import * as models from './logs.model';

export function createLogsFeature(deps: { engine: Engine; access: Access; clock: Clock; log: Logger; auth: WorkspaceAuthPlugin; exec: ExecService; sse: Sse; quotas: Quotas }): Feature<LogsService> {
  const hub = createLogHub({ engine: deps.engine, log: deps.log, clock: deps.clock });
  const logs = createLogsService({ engine: deps.engine, hub, access: deps.access, quotas: deps.quotas });
  return {
    service: logs,
    routes: logsRoutes({ auth: deps.auth, logs, exec: deps.exec, sse: deps.sse }),
    models: [models],
    // The hub learns from the workspaces' events when a stopped container runs again.
    listen: (bus) => hub.listen(bus),
    stop: () => hub.closeAll(),
  };
}
