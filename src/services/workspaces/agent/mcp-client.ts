// A session's own MCP servers (`mcpServers`): their tools offered to the model as `<name>__<tool>`
// through the AI SDK's MCP client, for the length of one turn. Their URLs follow the webhook targets'
// rules (platform/net/address-policy.ts plus the workspaces' guard: never metadata, link-local,
// another tenant's network or Keel's own ports), checked at create for a literal address; every
// request goes through the pinned fetch (platform/net/pinned-fetch.ts), which resolves a name once,
// checks it and connects to that address (a name that rebinds cannot move it). A server that cannot be reached, or a call that fails or outlives
// APP_AGENT_MCP_TIMEOUT_MS, is a clear result the model reads, never a failed turn.
import type { MCPClient } from '@ai-sdk/mcp';
import type { ToolSet } from 'ai';
import { literalRefusal, REFUSAL_TEXT, type Resolver, type TargetPolicy } from '../../../platform/net/address-policy';
import { createPinnedFetch } from '../../../platform/net/pinned-fetch';
import type { McpServer } from './agent.model';
import { WorkspaceErrors } from '../workspaces.errors';

const port = (u: URL) => Number(u.port || (u.protocol === 'https:' ? 443 : 80));

/** 400 INVALID_REQUEST for a server list the rules refuse (duplicate names, a URL Keel may not reach). */
export function checkMcpServers(servers: McpServer[], policy: TargetPolicy) {
  const seen = new Set<string>();
  servers.forEach((s, i) => {
    if (seen.has(s.name)) throw WorkspaceErrors.INVALID_REQUEST('mcpServers names must be unique', { field: `mcpServers/${i}/name` });
    seen.add(s.name);
    let url: URL;
    try {
      url = new URL(s.url);
    } catch {
      throw WorkspaceErrors.INVALID_REQUEST('an MCP server url must be an absolute http(s) URL', { field: `mcpServers/${i}/url` });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw WorkspaceErrors.INVALID_REQUEST('an MCP server url must be http:// or https://', { field: `mcpServers/${i}/url` });
    if (url.username || url.password) throw WorkspaceErrors.INVALID_REQUEST('put MCP server credentials in headers, not in the url', { field: `mcpServers/${i}/url` });
    const refused = literalRefusal(url.hostname.replace(/^\[|\]$/g, ''), policy, port(url));
    if (refused) throw WorkspaceErrors.INVALID_REQUEST(`an MCP server url may not be ${REFUSAL_TEXT[refused]}`, { field: `mcpServers/${i}/url` });
  });
}

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: Timer | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

const reason = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 500);

/**
 * Connects to every server (in parallel); answers their tools, a note for each server that could not
 * be reached (for the system text), and `close`. The headers are sent as given, never shown back.
 */
export async function connectMcpServers(servers: McpServer[], policy: TargetPolicy, timeoutMs: number, resolve?: Resolver) {
  // One for the turn: its connections are kept alive between the turn's calls and closed with it.
  const pinnedFetch = createPinnedFetch({ policy, resolve });
  const clients: MCPClient[] = [];
  const tools: ToolSet = {};
  const notes: string[] = [];
  await Promise.all(
    servers.map(async (s) => {
      try {
        // The MCP client loads with the first turn that names a server, not with Keel.
        const { createMCPClient } = await import('@ai-sdk/mcp');
        const client = await within(createMCPClient({ transport: { type: 'http', url: s.url, headers: s.headers, fetch: pinnedFetch as unknown as typeof fetch }, clientName: 'keel' }), timeoutMs, 'connecting');
        clients.push(client);
        const listed = await within(client.tools(), timeoutMs, 'listing its tools');
        for (const [name, t] of Object.entries(listed)) {
          const run = t.execute!;
          tools[`${s.name}__${name}`] = {
            ...t,
            execute: async (input: unknown, opts: Parameters<typeof run>[1]) => {
              try {
                return await within(Promise.resolve(run(input as never, opts)), timeoutMs, `the call to ${name}`);
              } catch (e) {
                return { error: `MCP server ${s.name} did not answer: ${reason(e)}` };
              }
            },
          } as ToolSet[string];
        }
      } catch (e) {
        notes.push(`The MCP server ${s.name} could not be reached (${reason(e)}); its tools are not available in this turn.`);
      }
    }),
  );
  return {
    tools,
    notes,
    close: () =>
      Promise.allSettled(clients.map((c) => c.close())).then(() => {
        pinnedFetch.close();
      }),
  };
}
