// Every read Keel makes for a caller is bounded before it is buffered (CONTRACT.md, wave 4): MCP
// read_file (the official SDK client) and the agent's read_file (driven by the fake provider) on
// /dev/zero, a FIFO with no writer and a file that grows while read answer at most
// APP_TOOL_READ_MAX_BYTES with `truncated: true`, and a directory of very many entries answers 413
// OUTPUT_TOO_LARGE, each while Keel (its own process, RSS read from the kernel) grows by under 32 MiB.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { createEngine } from '../../../src/services/workspaces/engine/docker';
import { keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../../helpers/fake-openai';
import { requireTestEnv, TEST_SECRET } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';

requireTestEnv('DOCKER_HOST');

const MiB = 1024 * 1024;
/** The contract's bound on what one request adds to Keel's memory. */
const GROWTH_MAX = 32 * MiB;
let keel: KeelProcess | undefined;
let fake: FakeOpenAI | undefined;
let client: Client | undefined;
let dataDir = '';
let ws = '';
let writer = '';
const token = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 3600 });
const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
  fetch(keel!.urls.workspaces + path, {
    ...init,
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
  });

/** Keel's resident memory now, from the kernel. */
function rss(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${keel!.proc.pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** Runs `work` while sampling Keel's RSS every 20 ms; its result, how long it took and the peak growth over the baseline before it. */
async function measured<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; growth: number }> {
  Bun.gc(true);
  const baseline = rss();
  let peak = baseline;
  const timer = setInterval(() => (peak = Math.max(peak, rss())), 20);
  const started = performance.now();
  try {
    const value = await work();
    return { value, ms: performance.now() - started, growth: Math.max(peak, rss()) - baseline };
  } finally {
    clearInterval(timer);
  }
}

async function shell(command: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const res = await api(`/api/workspaces/${ws}/exec`, { method: 'POST', json: { command, timeout: 120_000 } });
  expect(res.status).toBe(200);
  return res.json();
}

async function mcp(name: string, args: Record<string, unknown>) {
  const r = (await client!.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as { content: { text: string }[]; isError?: boolean };
  return { isError: r.isError === true, value: JSON.parse(r.content[0]!.text) };
}

/**
 * The agent calls `calls` in one step, then answers a short text (a model that does not echo the
 * megabyte back: what is measured is the read); the turn's tool outputs.
 */
async function agentTools(calls: { name: string; input: unknown }[]): Promise<any[]> {
  const s = await api('/api/agent/sessions', { method: 'POST', json: { workspaceId: ws, model: 'openai/tools' } });
  expect(s.status).toBe(201);
  const { id } = (await s.json()) as { id: string };
  fake!.queue({ tools: calls }, { text: ['Read.'] });
  const res = await api(`/api/agent/sessions/${id}/messages`, { method: 'POST', json: { message: 'read them' } });
  expect(res.status).toBe(200);
  const turn = (await res.json()) as { toolCalls: { name: string; output: any }[] };
  return turn.toolCalls.map((c) => c.output);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'keel-bounded-reads-'));
  fake = startFakeOpenAI();
  const lo = 28000 + Math.floor(Math.random() * 100) * 90;
  keel = await startKeel(
    [BUN, 'src/main.ts'],
    { APP_DATA_DIR: dataDir, APP_WORKSPACE_PORT_RANGE: `${lo}-${lo + 89}`, OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0' },
    ['workspaces'],
  );
  const res = await api('/api/workspaces', { method: 'POST', json: { name: 'bounded', template: 'minimal' } });
  expect(res.status).toBe(201);
  ws = ((await res.json()) as { id: string }).id;
  await waitFor('the workspace to run', async () => ((await (await api(`/api/workspaces/${ws}`)).json()) as { status: string }).status === 'running', 90_000);
  // A FIFO nobody writes to, a 4-byte binary file, a text file of exactly the bound, and a file
  // that a process keeps growing (~6 MB/s) for as long as the tests run.
  const made = await shell(
    "mkfifo /workspace/fifo && printf '\\000\\001\\377\\376' > /workspace/blob.bin && head -c 1048576 /dev/zero | tr '\\000' t > /workspace/exact.txt && : > /workspace/grow.txt",
  );
  expect(made.exitCode).toBe(0);
  const started = await api(`/api/workspaces/${ws}/processes`, {
    method: 'POST',
    json: { command: "while :; do head -c 65536 /dev/zero | tr '\\000' x >> /workspace/grow.txt; sleep 0.01; done" },
  });
  expect(started.status).toBe(201);
  writer = ((await started.json()) as { id: string }).id;
  client = new Client({ name: 'keel-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(keel.urls.workspaces + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  // Warm the paths once (tools, MCP session, agent turn), so the baselines hold their code.
  await mcp('read_file', { id: ws, path: 'blob.bin' });
  await agentTools([{ name: 'read_file', input: { path: 'blob.bin' } }]);
}, 180_000);

afterAll(async () => {
  if (writer) await api(`/api/workspaces/${ws}/processes/${writer}/signal`, { method: 'POST', json: { signal: 'KILL' } }).catch(() => undefined);
  await client?.close().catch(() => undefined);
  const instance = keelInstance(dataDir);
  await keel?.stop();
  await removeInstanceObjects(instance);
  fake?.close();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

test('MCP read_file of /dev/zero answers the first 1 MiB as base64, truncated, and Keel grows by under 32 MiB', async () => {
  const { value: r, growth } = await measured(() => mcp('read_file', { id: ws, path: '/dev/zero' }));
  console.log(`MCP /dev/zero: RSS +${(growth / MiB).toFixed(1)} MiB`);
  expect(r.isError).toBe(false);
  expect(r.value).toMatchObject({ path: '/dev/zero', encoding: 'base64', truncated: true });
  const bytes = Buffer.from(r.value.content, 'base64');
  expect(bytes.byteLength).toBe(MiB);
  expect(bytes.every((b) => b === 0)).toBe(true);
  expect(growth).toBeLessThan(GROWTH_MAX);
}, 60_000);

test('MCP read_file of a FIFO with no writer ends after the 10 s idle limit, saying so', async () => {
  const { value: r, ms, growth } = await measured(() => mcp('read_file', { id: ws, path: 'fifo' }));
  console.log(`MCP FIFO: ended after ${(ms / 1000).toFixed(1)} s, RSS +${(growth / MiB).toFixed(1)} MiB`);
  expect(r.isError).toBe(false);
  expect(r.value).toMatchObject({ path: '/workspace/fifo', size: 0, content: '', truncated: true, idle: true });
  expect(ms).toBeGreaterThanOrEqual(10_000);
  expect(ms).toBeLessThan(25_000);
  expect(growth).toBeLessThan(GROWTH_MAX);
  // The stalled reader was killed in the container: nothing of it is left.
  expect((await shell("ps -o args | grep -c '[d]d if=/workspace/fifo' || true")).stdout.trim()).toBe('0');
}, 60_000);

test('MCP read_file of a file that grows while read answers 1 MiB of text, truncated', async () => {
  const { value: r, growth } = await measured(() => mcp('read_file', { id: ws, path: 'grow.txt' }));
  console.log(`MCP growing file: RSS +${(growth / MiB).toFixed(1)} MiB`);
  expect(r.value).toMatchObject({ path: '/workspace/grow.txt', encoding: 'utf-8', truncated: true });
  expect(r.value.content).toBe('x'.repeat(MiB));
  expect(growth).toBeLessThan(GROWTH_MAX);
}, 60_000);

test('MCP read_file answers binary bytes as base64 and a file of exactly 1 MiB whole', async () => {
  expect((await mcp('read_file', { id: ws, path: 'blob.bin' })).value).toEqual({
    path: '/workspace/blob.bin',
    size: 4,
    encoding: 'base64',
    content: Buffer.from([0, 1, 0xff, 0xfe]).toString('base64'),
    truncated: false,
  });
  const exact = (await mcp('read_file', { id: ws, path: 'exact.txt' })).value;
  expect(exact).toMatchObject({ size: MiB, encoding: 'utf-8', truncated: false });
  expect(exact.content).toBe('t'.repeat(MiB));
}, 60_000);

for (const [what, path, expected] of [
  ['/dev/zero', '/dev/zero', (o: any) => {
    expect(o).toMatchObject({ path: '/dev/zero', encoding: 'base64', truncated: true });
    expect(Buffer.from(o.content, 'base64')).toEqual(Buffer.alloc(MiB));
  }],
  ['a FIFO with no writer', 'fifo', (o: any) => expect(o).toEqual({ path: 'fifo', content: '', truncated: true, idle: true })],
  ['a growing file', 'grow.txt', (o: any) => {
    expect(o).toMatchObject({ path: 'grow.txt', truncated: true });
    expect(o.encoding).toBeUndefined();
    expect(o.content).toBe('x'.repeat(MiB));
  }],
] as const) {
  test(`the agent's read_file of ${what} answers at most 1 MiB, truncated, and Keel grows by under 32 MiB`, async () => {
    const { value: outputs, growth, ms } = await measured(() => agentTools([{ name: 'read_file', input: { path } }]));
    console.log(`agent ${what}: ${(ms / 1000).toFixed(1)} s, RSS +${(growth / MiB).toFixed(1)} MiB`);
    expected(outputs[0]);
    expect(growth).toBeLessThan(GROWTH_MAX);
  }, 60_000);
}

test("the agent's read_file answers bytes that are not text as base64", async () => {
  const [blob] = await agentTools([{ name: 'read_file', input: { path: 'blob.bin' } }]);
  expect(blob).toEqual({ path: 'blob.bin', content: Buffer.from([0, 1, 0xff, 0xfe]).toString('base64'), encoding: 'base64' });
});

test('a directory of very many entries answers 413 OUTPUT_TOO_LARGE over HTTP, MCP and the agent', async () => {
  // 12 000 names of 190 characters: ~2.4 MB of listing, past the 2 MiB bound.
  const made = await shell(`mkdir -p /workspace/many && cd /workspace/many && seq 1 12000 | sed 's/^/${'n'.repeat(184)}-/' | xargs touch && ls | wc -l`);
  expect(made.stdout.trim()).toBe('12000');
  const { value: res, growth } = await measured(() => api(`/api/workspaces/${ws}/files?path=many`));
  console.log(`listing of 12 000 entries: RSS +${(growth / MiB).toFixed(1)} MiB`);
  expect(res.status).toBe(413);
  const body = (await res.json()) as { error: { code: string; message: string; details: { limit: number } } };
  expect(body.error).toMatchObject({ code: 'OUTPUT_TOO_LARGE', details: { limit: 2 * MiB } });
  expect(body.error.message).not.toContain('nnnn');
  expect(growth).toBeLessThan(GROWTH_MAX);
  // The listing helper was killed at the bound, not left blocked on its full pipe.
  await waitFor('the listing helper to end', async () => (await shell("ps -o args | grep -c '[k]eel-files' || true")).stdout.trim() === '0', 10_000);

  expect(await mcp('list_directory', { id: ws, path: 'many' })).toMatchObject({ isError: true, value: { error: { code: 'OUTPUT_TOO_LARGE' } } });
  const [listed] = await agentTools([{ name: 'list_directory', input: { path: 'many' } }]);
  expect(listed).toMatchObject({ path: 'many', code: 'OUTPUT_TOO_LARGE' });

  // A directory within the bound still lists whole.
  expect((await shell('cd /workspace/many && ls | tail -n 2000 | xargs rm')).exitCode).toBe(0);
  const ok = await api(`/api/workspaces/${ws}/files?path=many`);
  expect(ok.status).toBe(200);
  expect(((await ok.json()) as { entries: unknown[] }).entries).toHaveLength(10_000);
}, 120_000);

test("the engine's execCollect keeps at most its bound of a command that floods, and ends the exec there", async () => {
  const { containerId } = (await (await api(`/api/workspaces/${ws}`)).json()) as { containerId: string };
  const engine = createEngine(process.env.DOCKER_HOST);
  const { value: r, ms } = await measured(() => engine.execCollect(containerId, ['sh', '-c', 'exec yes keel-flood'], 64 * 1024));
  expect(r).toMatchObject({ truncated: true, exitCode: null, stderr: '' });
  expect(r.stdout.length).toBe(64 * 1024);
  expect(r.stdout.startsWith('keel-flood\nkeel-flood\n')).toBe(true);
  expect(ms).toBeLessThan(10_000);
  // The closed exec's writer died on its broken pipe: nothing floods on in the container.
  await waitFor('the flooding command to end', async () => (await shell("ps -o args | grep -c '[y]es keel-flood' || true")).stdout.trim() === '0', 10_000);
}, 30_000);
