// The terminals feature: PTYs in a workspace over a WebSocket, with tickets and reattach. Its attach
// route authorises by ticket, so the composition root mounts it before the workspace auth (`attach`).
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { createTerminalsService, type TerminalsService } from './terminals.service';
import { terminalAttachRoute, terminalsRoutes } from './terminals.routes';
import * as models from './terminals.model';

export function createTerminalsFeature(deps: Parameters<typeof createTerminalsService>[0] & { auth: WorkspaceAuthPlugin }) {
  const terminals = createTerminalsService(deps);
  return {
    service: terminals,
    routes: terminalsRoutes({ auth: deps.auth, terminals }),
    attach: terminalAttachRoute({ terminals }),
    models: [models],
    stop: () => terminals.close(),
  } satisfies Feature<TerminalsService> & { attach: unknown };
}
