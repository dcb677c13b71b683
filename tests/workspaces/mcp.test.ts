// Keel as an MCP server at /mcp, driven by the official SDK's Client over Streamable HTTP as Claude
// Code or Cursor would: the tools listed with their input schemas, a workspace created, run in and
// deleted through MCP against a real engine, the same Bearer token and ownership as HTTP (another
// actor's workspace is WORKSPACE_NOT_FOUND), a workspace's files and processes through the same
// services (quota included), bad input a tool error, no token no connection.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, createRunning, waitStatus } from '../helpers/workspaces';

let p: TestPlatform;
const clients: Client[] = [];

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_QUOTA_PROCESSES: '2' } });
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
  expect(tools.map((t) => t.name).sort()).toEqual([
    'create_preview',
    'create_workspace',
    'delete_workspace',
    'exec',
    'get_process',
    'list_directory',
    'list_previews',
    'list_templates',
    'list_workspaces',
    'read_file',
    'revoke_preview',
    'signal_process',
    'start_process',
    'start_workspace',
    'stop_workspace',
    'write_file',
  ]);
  expect(tools.find((t) => t.name === 'write_file')!.inputSchema.required).toEqual(expect.arrayContaining(['id', 'path', 'content']));
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

test('files are written, read back (text or base64) and listed through MCP, as HTTP sees them', async () => {
  const { id } = await createRunning(p, 'mcp-files', { timeoutMs: 90_000 });
  const client = await connect(p.token('alice'));
  const written = await call(client, 'write_file', { id, path: 'notes/hello.txt', content: 'héllo from mcp\n' });
  expect(written).toEqual({ isError: false, value: { path: '/workspace/notes/hello.txt', size: 16 } });
  const read = await call(client, 'read_file', { id, path: '/workspace/notes/hello.txt' });
  expect(read.value).toEqual({ path: '/workspace/notes/hello.txt', size: 16, encoding: 'utf-8', content: 'héllo from mcp\n', truncated: false });
  // The same bytes over HTTP.
  const http = await p.api('workspaces', `/api/workspaces/${id}/files?path=notes/hello.txt`);
  expect(await http.text()).toBe('héllo from mcp\n');

  // Bytes that are not UTF-8 go both ways as base64.
  const binary = Buffer.from([0, 0xff, 0xfe, 7]).toString('base64');
  expect((await call(client, 'write_file', { id, path: 'notes/blob.bin', content: binary, encoding: 'base64' })).value.size).toBe(4);
  expect((await call(client, 'read_file', { id, path: 'notes/blob.bin' })).value).toMatchObject({ size: 4, encoding: 'base64', content: binary });

  // Past 1 MiB the read is cut, and says so; a character split at the cut is left out, the rest stays text.
  const big = 'a' + 'é'.repeat(600_000);
  expect((await call(client, 'write_file', { id, path: 'big.txt', content: big })).value.size).toBe(1_200_001);
  const cut = (await call(client, 'read_file', { id, path: 'big.txt' })).value;
  expect(cut).toMatchObject({ size: 1_200_001, encoding: 'utf-8', truncated: true });
  expect(cut.content).toBe('a' + 'é'.repeat(524_287));

  const listed = await call(client, 'list_directory', { id, path: 'notes' });
  expect(listed.value.type).toBe('directory');
  expect(listed.value.entries.map((e: { name: string; type: string; size: number }) => [e.name, e.type, e.size])).toEqual([
    ['blob.bin', 'file', 4],
    ['hello.txt', 'file', 16],
  ]);
  expect((await call(client, 'list_directory', { id })).value.entries.map((e: { name: string }) => e.name)).toContain('notes');

  const missing = await call(client, 'read_file', { id, path: 'notes/none.txt' });
  expect(missing).toMatchObject({ isError: true, value: { error: { code: 'FILE_NOT_FOUND' } } });

  // Another actor: the workspace does not exist for them, and nothing of theirs is written.
  const mallory = await connect(p.token('mallory'));
  for (const [name, args] of [
    ['read_file', { id, path: 'notes/hello.txt' }],
    ['write_file', { id, path: 'notes/hello.txt', content: 'pwned' }],
    ['list_directory', { id }],
  ] as const) {
    const r = await call(mallory, name, args);
    expect(r.isError).toBe(true);
    expect(r.value.error.code).toBe('WORKSPACE_NOT_FOUND');
  }
  expect((await call(client, 'read_file', { id, path: 'notes/hello.txt' })).value.content).toBe('héllo from mcp\n');
  await p.api('workspaces', `/api/workspaces/${id}?volumes=true`, { method: 'DELETE' });
}, 180_000);

test('a process started through MCP keeps running, its output is read, it is signalled; the quota holds', async () => {
  const { id } = await createRunning(p, 'mcp-procs', { timeoutMs: 90_000 });
  const client = await connect(p.token('alice'));
  const started = await call(client, 'start_process', { id, command: 'echo ready; echo oops >&2; sleep 300', name: 'server' });
  expect(started).toMatchObject({ isError: false, value: { name: 'server', status: 'running' } });
  const pid = started.value.id as string;

  let got: any;
  for (let i = 0; i < 100; i++) {
    got = (await call(client, 'get_process', { id, pid })).value;
    if (got.output.stdout === 'ready\n' && got.output.stderr === 'oops\n') break;
    await Bun.sleep(100);
  }
  expect(got).toMatchObject({ id: pid, status: 'running', output: { stdout: 'ready\n', stderr: 'oops\n' } });
  // HTTP sees the same process.
  expect(((await (await p.api('workspaces', `/api/workspaces/${id}/processes/${pid}`)).json()) as any).status).toBe('running');

  // APP_QUOTA_PROCESSES=2: a second running process fits, a third is refused as over HTTP.
  const second = await call(client, 'start_process', { id, command: 'sleep 300' });
  expect(second.isError).toBe(false);
  const third = await call(client, 'start_process', { id, command: 'true' });
  expect(third).toMatchObject({ isError: true, value: { error: { code: 'QUOTA_EXCEEDED', details: { quota: 'processes', limit: 2 } } } });

  // Another actor sees neither the workspace nor the process.
  const mallory = await connect(p.token('mallory'));
  for (const [name, args] of [
    ['start_process', { id, command: 'true' }],
    ['get_process', { id, pid }],
    ['signal_process', { id, pid, signal: 'KILL' }],
  ] as const) {
    const r = await call(mallory, name, args);
    expect(r.isError).toBe(true);
    expect(r.value.error.code).toBe('WORKSPACE_NOT_FOUND');
  }

  for (const target of [pid, second.value.id as string]) {
    const signalled = await call(client, 'signal_process', { id, pid: target, signal: 'KILL' });
    expect(signalled).toEqual({ isError: false, value: { id: target, signalled: true } });
  }
  for (let i = 0; i < 100 && got.status === 'running'; i++) {
    await Bun.sleep(100);
    got = (await call(client, 'get_process', { id, pid })).value;
  }
  expect(got).toMatchObject({ status: 'exited', output: { stdout: 'ready\n' } });
  expect(got.exitCode).not.toBe(0);
  const unknown = await call(client, 'get_process', { id, pid: 'proc_nothing' });
  expect(unknown).toMatchObject({ isError: true, value: { error: { code: 'PROCESS_NOT_FOUND' } } });
  await p.api('workspaces', `/api/workspaces/${id}?volumes=true`, { method: 'DELETE' });
}, 180_000);

test('bad input is a tool error with INVALID_REQUEST, nothing done', async () => {
  const client = await connect(p.token('alice'));
  for (const [name, args] of [['exec', { id: 'ws_x' }], ['create_workspace', { name: 'x', template: 'minimal', bogus: 1 }], ['stop_workspace', {}], ['write_file', { id: 'ws_x', path: 'a' }], ['signal_process', { id: 'ws_x', pid: 'proc_x', signal: 'STOP' }]] as const) {
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
