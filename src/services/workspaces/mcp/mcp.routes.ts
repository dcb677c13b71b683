// Keel as an MCP server at POST /mcp (Streamable HTTP, stateless: each request stands alone, JSON
// answers), built with the official SDK. The Bearer token, rate limit and ownership are the HTTP
// API's (the auth plugin runs first); the tools are mcp.tools.ts. No server-sent stream to open and no
// session to end: GET and DELETE answer 405, as the transport's specification allows.
import { Elysia, t } from 'elysia';
import type { Actor } from '../../../platform/auth/workspace-token';
import { VERSION } from '../../../platform/http/health';
import type { WorkspaceAuthPlugin } from '../../../platform/http/workspace-auth';
import { workspaceOperation as op } from '../workspaces.errors';
import { callTool, mcpTools, toolList, type McpToolDeps } from './mcp.tools';

/** The MCP SDK (~25 MB resident) loads with the first /mcp request, not with Keel (docs/benchmarks.md, start-up). */
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/index.js'), typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), typeof import('@modelcontextprotocol/sdk/types.js')]> | undefined;
const loadSdk = () =>
  (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/index.js'), import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), import('@modelcontextprotocol/sdk/types.js')]));

export function mcpRoutes(deps: McpToolDeps & { auth: WorkspaceAuthPlugin }) {
  const tools = mcpTools(deps);
  const list = toolList(tools);

  async function handle(actor: Actor, request: Request, body: unknown): Promise<Response> {
    const [{ Server }, { WebStandardStreamableHTTPServerTransport }, { CallToolRequestSchema, ListToolsRequestSchema }] = await loadSdk();
    const server = new Server({ name: 'keel', version: VERSION }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: list }));
    server.setRequestHandler(CallToolRequestSchema, async (req) => callTool(tools, actor, req.params.name, req.params.arguments));
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody: body });
    } finally {
      void server.close();
    }
  }

  const notHere = () => new Response(null, { status: 405, headers: { allow: 'POST' } });
  return new Elysia({ name: 'workspaces.mcp' })
    .use(deps.auth)
    .post('/mcp', ({ actor, request, body }) => handle(actor, request, body), {
      body: t.Unknown({ description: 'a JSON-RPC 2.0 message (or batch) of the Model Context Protocol' }),
      response: { 200: t.Unknown({ description: 'the JSON-RPC answer' }) },
      detail: {
        ...op('mcp'),
        tags: ['mcp'],
        summary: 'Model Context Protocol endpoint (Streamable HTTP): workspaces as tools for any MCP client',
        description:
          'The same Bearer token as the HTTP API. Tools: `list_workspaces`, `create_workspace`, `start_workspace`, `stop_workspace`, `delete_workspace`, `exec`, `read_file`, `write_file`, `list_directory`, `start_process`, `get_process`, `signal_process`, `create_preview`, `list_previews`, `revoke_preview`; ' +
          "each acts as the token's actor (another actor's workspace is WORKSPACE_NOT_FOUND) under the same quotas. A refused call is a tool result with `isError: true` " +
          'whose text is the HTTP error envelope. Stateless: no `Mcp-Session-Id`; GET and DELETE answer 405. See docs/agent.md, "Keel as an MCP server".',
      },
    })
    .get('/mcp', notHere, { detail: { hide: true } })
    .delete('/mcp', notHere, { detail: { hide: true } });
}
