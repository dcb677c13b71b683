// The agent feature: sessions that act in their workspace (/api/workspaces/{id}/agent/...), the turn
// runner, and the tools (exec and files, through those features' services).
import type { Sse } from '../../../platform/http/sse';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import type { AgentConfig } from './agent.config';
import { agentRoutes } from './agent.routes';
import { createAgentService, type AgentService, type AgentServiceDeps } from './agent.service';
import * as models from './agent.model';

export function createAgentFeature(deps: AgentServiceDeps & { auth: WorkspaceAuthPlugin; config: AgentConfig; sse: Sse }): Feature<AgentService> {
  const agent = createAgentService(deps);
  return {
    service: agent,
    routes: agentRoutes({ auth: deps.auth, agent, config: deps.config, sse: deps.sse }),
    models: [models],
    // Turns a previous run left in flight end as interrupted.
    start: () => agent.recover(),
    stop: () => agent.close(),
  };
}
