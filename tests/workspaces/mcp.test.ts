// Keel as an MCP server at /mcp, driven by the official SDK's Client over Streamable HTTP as Claude
// Code or Cursor would: the tools listed with their input schemas, a workspace created, run in and
// deleted through MCP against a real engine, the same Bearer token and ownership as HTTP (another
// actor's workspace is WORKSPACE_NOT_FOUND), bad input a tool error, no token no connection.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, waitStatus } from '../helpers/workspaces';

let p: TestPlatform;
const clients: Client[] = [];

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
}, 60_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await closeAndClean(p);
}, 60_000);

async function connect(token: string | null): Promise<Client> {
  const client = new Client({ name: 'keel-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(p.url('workspaces') + '/mcp'), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** A tool's answer: the JSON of its text, and whether it is an error. */
async function call(client: Client, name: string, args: Record<string, unknown>) {
  const r = (await client.callTool({ name, arguments: args })) as { content: { type: string; text: string }[]; isError?: boolean };
  return { isError: r.isError === true, value: JSON.parse(r.content[0]!.text) };
}

test('the tools are listed with their input schemas', async () => {
  const client = await connect(p.token('alice'));
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(['create_workspace', 'delete_workspace', 'exec', 'list_workspaces', 'start_workspace', 'stop_workspace']);
  const exec = tools.find((t) => t.name === 'exec')!;
  expect(exec.inputSchema.required).toEqual(expect.arrayContaining(['id', 'command']));
  expect((exec.inputSchema.properties as any).command.type).toBe('string');
  expect((tools.find((t) => t.name === 'create_workspace')!.inputSchema.required as string[])).toContain('name');
});

test('a workspace is created, runs a command, is stopped and deleted through MCP, as HTTP sees it', async () => {
  const client = await connect(p.token('alice'));
  const created = await call(client, 'create_workspace', { name: 'mcp-box', template: 'minimal' });
  expect(created.isError).toBe(false);
  expect(created.value).toMatchObject({ name: 'mcp-box', status: 'creating' });
  const id = created.value.id as string;
  await waitStatus(p, id, 'running', { timeoutMs: 90_000 });

  const listed = await call(client, 'list_workspaces', {});
  expect(listed.value.workspaces.map((w: { id: string }) => w.id)).toContain(id);
  const ran = await call(client, 'exec', { id, command: 'echo $((6*7)) from mcp' });
  expect(ran).toMatchObject({ isError: false, value: { exitCode: 0, stdout: '42 from mcp\n', timedOut: false } });
  // The same command over HTTP answers the same.
  const http = await p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command: 'echo $((6*7)) from mcp' } });
  expect(((await http.json()) as { stdout: string }).stdout).toBe('42 from mcp\n');

  // Another actor: the workspace does not exist for them.
  const mallory = await connect(p.token('mallory'));
  expect((await call(mallory, 'list_workspaces', {})).value.workspaces).toEqual([]);
  for (const [name, args] of [['exec', { id, command: 'id' }], ['stop_workspace', { id }], ['delete_workspace', { id }]] as const) {
    const r = await call(mallory, name, args);
    expect(r.isError).toBe(true);
    expect(r.value.error.code).toBe('WORKSPACE_NOT_FOUND');
  }

  expect((await call(client, 'stop_workspace', { id })).value).toMatchObject({ id, status: 'stopping' });
  await waitStatus(p, id, 'stopped', { timeoutMs: 60_000 });
  const notRunning = await call(client, 'exec', { id, command: 'true' });
  expect(notRunning).toMatchObject({ isError: true, value: { error: { code: 'WORKSPACE_NOT_RUNNING' } } });
  expect((await call(client, 'delete_workspace', { id })).value).toEqual({ id, deleted: true });
  expect((await p.api('workspaces', `/api/workspaces/${id}`)).status).toBe(404);
}, 180_000);

test('bad input is a tool error with INVALID_REQUEST, nothing done', async () => {
  const client = await connect(p.token('alice'));
  for (const [name, args] of [['exec', { id: 'ws_x' }], ['create_workspace', { name: 'x', template: 'minimal', bogus: 1 }], ['stop_workspace', {}]] as const) {
    const r = await call(client, name, args);
    expect(r.isError).toBe(true);
    expect(r.value.error.code).toBe('INVALID_REQUEST');
  }
  const unknown = await call(client, 'format_disk', {});
  expect(unknown.isError).toBe(true);
});

test('without a valid token the MCP endpoint refuses to connect', async () => {
  await expect(connect(null)).rejects.toThrow();
  await expect(connect('not-a-jwt')).rejects.toThrow();
  const res = await fetch(p.url('workspaces') + '/mcp', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(res.status).toBe(401);
  const get = await fetch(p.url('workspaces') + '/mcp', { headers: { authorization: `Bearer ${p.token('alice')}` } });
  expect(get.status).toBe(405);
});
