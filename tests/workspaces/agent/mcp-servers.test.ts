// A session's own MCP servers: a real MCP server the test runs (the official SDK's server over
// Streamable HTTP on loopback) whose tools the model calls as `<name>__<tool>` through the fake
// provider; the session's approval policy applies to them; a server that is down is a clear note or
// tool result, never a failed turn; URLs Keel may not reach (metadata, Keel's own port) are refused.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { startCalcServer } from '../../helpers/mcp-calc';
import { sseReader } from '../../helpers/sse';
import { parse, readAll, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;
let mcp: ReturnType<typeof Bun.serve>;
const seenHeaders: (string | null)[] = [];

beforeAll(async () => {
  mcp = startCalcServer((request) => seenHeaders.push(request.headers.get('x-calc-key')));
  rig = await startAgentRig('agent-mcp', { APP_AGENT_MCP_TIMEOUT_MS: '5000' }, { running: false });
}, 120_000);
afterAll(async () => {
  mcp.stop(true);
  await rig.close();
}, 60_000);

const calcUrl = () => `http://127.0.0.1:${mcp.port}/mcp`;
async function session(extra: Record<string, unknown> = {}) {
  const res = await rig.api('/api/agent/sessions', {
    method: 'POST',
    json: { workspaceId: rig.ws, model: 'openai/tools', mcpServers: [{ name: 'calc', url: calcUrl(), headers: { 'x-calc-key': 'k-123' } }], ...extra },
  });
  expect(res.status).toBe(201);
  return res.json();
}
const addCall = JSON.stringify([{ name: 'calc__add', input: { a: 2, b: 40 } }]);

test("the server's tools are offered as <name>__<tool> and their results reach the model", async () => {
  const s = await session();
  expect(s.mcpServers).toEqual([{ name: 'calc', url: calcUrl() }]);
  const before = rig.fake.requests.length;
  const evs = await readAll(await send(rig, s.id, addCall, { stream: true }));
  const offered = rig.fake.requests[before]!.tools.map((t) => t.function.name);
  expect(offered).toContain('calc__add');
  expect(offered).toContain('run_command');
  const tool = evs.find((e) => e.event === 'tool')!;
  expect(tool.data).toMatchObject({ name: 'calc__add', input: { a: 2, b: 40 } });
  expect(JSON.stringify(tool.data.output)).toContain('sum=42');
  expect(evs.at(-1)).toMatchObject({ event: 'done', data: { finishReason: 'stop' } });
  expect(evs.at(-1)!.data.content).toContain('sum=42');
  // The configured headers went to the server, and are never shown back.
  expect(seenHeaders).toContain('k-123');
  expect(JSON.stringify(await (await rig.api(`/api/agent/sessions/${s.id}`)).json())).not.toContain('k-123');
}, 60_000);

test("the session's approval policy applies to MCP tools", async () => {
  const s = await session({ toolApproval: ['calc__add'] });
  const reader = sseReader(await send(rig, s.id, addCall, { stream: true }));
  const first = parse((await reader.nextEvent(20_000))!);
  expect(first).toMatchObject({ event: 'approval', data: { name: 'calc__add', input: { a: 2, b: 40 } } });
  const ok = await rig.api(`/api/agent/sessions/${s.id}/approvals/${first.data.id}`, { method: 'POST', json: { decision: 'approve' } });
  expect(ok.status).toBe(200);
  const rest = (await reader.collect(() => false, 30_000)).map(parse);
  expect(JSON.stringify(rest.find((e) => e.event === 'tool')!.data.output)).toContain('sum=42');
}, 60_000);

test('a server that is down leaves the turn going: the model is told, nothing fails', async () => {
  const down = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('no') });
  const url = `http://127.0.0.1:${down.port}/mcp`;
  down.stop(true);
  const res = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', mcpServers: [{ name: 'gone', url }] } });
  const s = await res.json();
  const before = rig.fake.requests.length;
  const reply = await (await send(rig, s.id, JSON.stringify([{ name: 'gone__anything', input: {} }]))).json();
  expect(reply.finishReason).toBe('stop');
  const req = rig.fake.requests[before]!;
  expect(req.tools.map((t) => t.function.name)).not.toContain('gone__anything');
  expect(String(req.messages[0]!.content)).toContain('The MCP server gone could not be reached');
  expect(reply.toolCalls[0].output).toMatchObject({ error: expect.any(String) });
}, 60_000);

test('MCP server URLs follow the webhook targets rules', async () => {
  const bad = [
    { name: 'meta', url: 'http://169.254.169.254/mcp' },
    { name: 'self', url: `${rig.p.url('workspaces')}/mcp` },
    { name: 'ftp', url: 'ftp://example.com/mcp' },
    { name: 'creds', url: 'http://user:pw@example.com/mcp' },
  ];
  for (const server of bad) {
    const res = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', mcpServers: [server] } });
    expect(res.status, server.name).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(body)).not.toContain('169.254');
  }
  const dup = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', mcpServers: [{ name: 'a', url: calcUrl() }, { name: 'a', url: calcUrl() }] } });
  expect(dup.status).toBe(400);
  const badName = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', mcpServers: [{ name: 'a__b', url: calcUrl() }] } });
  expect(badName.status).toBe(400);
});

test("a server named `localhost` on Keel's own port is accepted as a name, then refused when resolved: the model is told", async () => {
  const own = new URL(rig.p.url('workspaces'));
  const url = `http://localhost:${own.port}/mcp`;
  const res = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', mcpServers: [{ name: 'self', url }] } });
  expect(res.status).toBe(201);
  const s = await res.json();
  const before = rig.fake.requests.length;
  const reply = await (await send(rig, s.id, JSON.stringify([{ name: 'self__anything', input: {} }]))).json();
  expect(reply.finishReason).toBe('stop');
  const note = String(rig.fake.requests[before]!.messages[0]!.content);
  expect(note).toContain('The MCP server self could not be reached');
  expect(note).toContain("Keel's own port");
}, 60_000);
