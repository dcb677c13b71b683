// A small MCP server for the tests: the official SDK's server over Streamable HTTP on loopback, with
// one tool, `add`, that sums two numbers. `onRequest` sees every request (its Host, its headers).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export function startCalcServer(onRequest: (request: Request) => void = () => {}) {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      onRequest(request);
      const server = new Server({ name: 'calc', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [{ name: 'add', description: 'a + b', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } }],
      }));
      server.setRequestHandler(CallToolRequestSchema, async (req) => {
        const { a, b } = req.params.arguments as { a: number; b: number };
        return { content: [{ type: 'text', text: `sum=${a + b}` }] };
      });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      return transport.handleRequest(request);
    },
  });
}
