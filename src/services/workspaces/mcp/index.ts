// The MCP feature: Keel as a Model Context Protocol server at /mcp, its tools over other features' services.
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import type { Feature } from '../../../platform/feature';
import { mcpRoutes } from './mcp.routes';
import type { McpToolDeps } from './mcp.tools';

export function createMcpFeature(deps: McpToolDeps & { auth: WorkspaceAuthPlugin }): Feature<null> {
  return { service: null, routes: mcpRoutes(deps) };
}
