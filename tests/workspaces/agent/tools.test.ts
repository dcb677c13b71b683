// The agent acting in a real `minimal` workspace: a command's output fed back to the model, files
// written, read and listed inside the container (never the host), bad tool input, cancel killing a
// running command, and a workspace that is not running answering the model instead of failing the turn.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { waitFor } from '../../helpers/docker';
import { sseReader } from '../../helpers/sse';
import { waitStatus } from '../../helpers/workspaces';
import { createSession, parse, readAll, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;

beforeAll(async () => {
  // A short provider silence limit: a command may run longer than it (the limit watches the provider
  // only). One open stream per actor, for the quota test.
  rig = await startAgentRig('agent-tools', { APP_AGENT_PROVIDER_TIMEOUT_MS: '1500', APP_QUOTA_STREAMS: '1' });
}, 120_000);
afterAll(() => rig.close(), 60_000);

/** Runs a command through the exec API (the test's own view of the workspace). */
async function shell(command: string): Promise<{ exitCode: number; stdout: string }> {
  const res = await rig.api(`/api/workspaces/${rig.ws}/exec`, { method: 'POST', json: { command } });
  expect(res.status).toBe(200);
  return res.json();
}

const useTools = async (sessionId: string, calls: { name: string; input: unknown }[]) => {
  const res = await send(rig, sessionId, JSON.stringify(calls));
  expect(res.status).toBe(200);
  return res.json();
};

test('a command really runs in the workspace and its output is fed back to the model', async () => {
  const s = await createSession(rig, 'shell');
  const before = rig.fake.requests.length;
  const res = await send(rig, s.id, 'echo $((6*7)) && cat /etc/hostname', { stream: true });
  const evs = await readAll(res);
  const tool = evs.find((e) => e.event === 'tool')!;
  const containerHost = (await shell('cat /etc/hostname')).stdout;
  expect(tool.data).toEqual({
    id: expect.any(String),
    name: 'run_command',
    input: { command: 'echo $((6*7)) && cat /etc/hostname' },
    output: { exitCode: 0, stdout: `42\n${containerHost}`, stderr: '', timedOut: false },
  });
  // Two provider calls: the tool call, then the answer made from the tool result.
  expect(rig.fake.requests.length).toBe(before + 2);
  const second = rig.fake.requests.at(-1)!;
  const toolMessage = second.messages.find((m) => m.role === 'tool')!;
  expect(JSON.parse(String(toolMessage.content))).toMatchObject({ exitCode: 0, stdout: `42\n${containerHost}` });
  const done = evs.at(-1)!;
  expect(done.event).toBe('done');
  // Text, then the tool, then text again: the events in that order, the deltas joined equal to the content.
  expect(evs.map((e) => e.event).join(' ')).toMatch(/^(delta )+tool (delta )+done$/);
  expect(done.data.content.startsWith('Running it. Tool output: ')).toBe(true);
  expect(evs.filter((e) => e.event === 'delta').map((e) => e.data.content).join('')).toBe(done.data.content);
  expect(done.data.content).toContain('42');
  expect(done.data.toolCalls).toEqual([tool.data]);
  // The usage sums both provider calls.
  expect(done.data.usage.promptTokens).toBe(rig.fake.requests.slice(-2).reduce((n, r) => n + 10 + r.messages.length, 0));
  // History keeps the tool step, and the next turn shows it to the model.
  await send(rig, s.id, 'true');
  const third = rig.fake.requests.at(-2)!;
  expect(third.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
  const asked = third.messages.find((m) => m.role === 'assistant' && Array.isArray(m.tool_calls))!;
  expect(asked.content).toBe('Running it. ');
  // The step's text and call, its result, then the answer after it, as they happened.
  expect(third.messages.slice(1).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
});

test('a command may outlast the provider silence limit: only the provider is watched', async () => {
  const s = await createSession(rig, 'shell');
  const r = await (await send(rig, s.id, 'sleep 3; echo slept')).json();
  expect(r.finishReason).toBe('stop');
  expect(r.toolCalls[0].output).toMatchObject({ exitCode: 0, stdout: 'slept\n' });
});

test('files are written, read and listed inside the workspace, not on the host', async () => {
  const s = await createSession(rig, 'tools');
  const text = 'héllo wörld\nline two\n';
  const w = await useTools(s.id, [{ name: 'write_file', input: { path: 'notes/a.txt', content: text } }]);
  expect(w.toolCalls[0].output).toEqual({ path: 'notes/a.txt', bytes: Buffer.byteLength(text) });
  expect((await shell('cat /workspace/notes/a.txt')).stdout).toBe(text);

  const r = await useTools(s.id, [{ name: 'read_file', input: { path: 'notes/a.txt' } }]);
  expect(r.toolCalls[0].output).toEqual({ path: 'notes/a.txt', content: text });

  const l = await useTools(s.id, [{ name: 'list_directory', input: { path: 'notes' } }]);
  expect(l.toolCalls[0].output.listing).toContain('a.txt');

  // Absolute paths are the container's: its /etc/hostname, and a /tmp file the host does not get.
  const h = await useTools(s.id, [{ name: 'read_file', input: { path: '/etc/hostname' } }]);
  expect(h.toolCalls[0].output.content).toBe((await shell('cat /etc/hostname')).stdout);
  expect(h.toolCalls[0].output.content.trim()).not.toBe(hostname());
  const probe = `/tmp/keel-agent-probe-${Date.now()}`;
  await useTools(s.id, [{ name: 'write_file', input: { path: probe, content: 'inside' } }]);
  expect((await shell(`cat ${probe}`)).stdout).toBe('inside');
  expect(existsSync(probe)).toBe(false);
});

test('a large file with multi-byte characters is written whole', async () => {
  const s = await createSession(rig, 'tools');
  const text = 'añb€c😀\n'.repeat(6000);
  const w = await useTools(s.id, [{ name: 'write_file', input: { path: '/workspace/big.txt', content: text } }]);
  expect(w.toolCalls[0].output.bytes).toBe(Buffer.byteLength(text));
  expect((await shell('wc -c < /workspace/big.txt')).stdout.trim()).toBe(String(Buffer.byteLength(text)));
  expect((await shell('sha1sum /workspace/big.txt')).stdout.split(' ')[0]).toBe(new Bun.CryptoHasher('sha1').update(text).digest('hex'));
});

test('a missing file and bad tool input are results the model reads; the turn goes on', async () => {
  const s = await createSession(rig, 'tools');
  const r = await useTools(s.id, [{ name: 'read_file', input: { path: '/no/such/file' } }]);
  expect(r.finishReason).toBe('stop');
  expect(r.toolCalls[0].output.error).toContain('No such file');
  const bad = await useTools(s.id, [{ name: 'run_command', input: { workdir: '/tmp' } }]);
  expect(bad.finishReason).toBe('stop');
  expect(bad.toolCalls[0].output.error).toBeString();
});

test('cancel kills the running command and keeps the usage of the finished steps', async () => {
  const s = await createSession(rig, 'tools');
  const marker = 'sleep 313';
  const res = await send(rig, s.id, JSON.stringify([{ name: 'run_command', input: { command: marker } }]), { stream: true });
  await waitFor('the command to run in the workspace', async () => (await shell('ps -o args')).stdout.includes(marker), 20_000, 100);
  const cancel = await rig.api(`/api/agent/sessions/${s.id}/cancel`, { method: 'POST' });
  expect(await cancel.json()).toEqual({ id: s.id, cancelled: true });
  const evs = (await sseReader(res).collect(() => false)).map(parse);
  expect(evs.at(-1)).toMatchObject({ event: 'done', data: { finishReason: 'cancelled' } });
  await waitFor('the command to be gone', async () => !(await shell('ps -o args')).stdout.includes(marker), 10_000, 100);
  const stored = (await (await rig.api(`/api/agent/sessions/${s.id}`)).json()).messages.at(-1);
  expect(stored.finishReason).toBe('cancelled');
  expect(stored.usage.totalTokens).toBeGreaterThan(0);
});

test('an open agent stream holds one of the actor\'s APP_QUOTA_STREAMS slots; past it nothing starts', async () => {
  const a = await createSession(rig, 'slow');
  const b = await createSession(rig, 'echo');
  const res = await send(rig, a.id, 'go', { stream: true });
  const reader = sseReader(res);
  await reader.nextEvent();
  const asked = rig.fake.requests.length;
  for (const r of [await send(rig, b.id, 'hi', { stream: true }), await rig.api(`/api/agent/sessions/${a.id}/events`)]) {
    expect(r.status).toBe(429);
    expect((await r.json()).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'streams', limit: 1 } });
  }
  // A message without stream holds a slot for its turn as well: refused too.
  const plain = await send(rig, b.id, 'plain');
  expect(plain.status).toBe(429);
  expect((await plain.json()).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'streams', limit: 1 } });
  expect(rig.fake.requests.length).toBe(asked);
  expect((await (await rig.api(`/api/agent/sessions/${b.id}`)).json()).messages).toEqual([]);
  await rig.api(`/api/agent/sessions/${a.id}/cancel`, { method: 'POST' });
  await reader.collect(() => false);
  // The stream ended: its slot is back.
  await waitFor('the slot to come back', async () => {
    const r = await rig.api(`/api/agent/sessions/${a.id}/events?after=1000000`);
    if (r.status === 200) await r.text();
    return r.status === 200;
  });
});

// Last: it stops the shared workspace.
test('a workspace that is not running makes the tool answer so, and the turn ends normally', async () => {
  const s = await createSession(rig, 'shell');
  const stop = await rig.api(`/api/workspaces/${rig.ws}/stop`, { method: 'POST' });
  expect(stop.status).toBe(200);
  await waitStatus(rig.p, rig.ws, 'stopped', { timeoutMs: 60_000 });
  const r = await (await send(rig, s.id, 'echo hi')).json();
  expect(r.finishReason).toBe('stop');
  expect(r.toolCalls[0].output).toMatchObject({ code: 'WORKSPACE_NOT_RUNNING', error: expect.stringContaining('stopped') });
  expect(r.content).toContain('WORKSPACE_NOT_RUNNING');
}, 90_000);

test('a deleted workspace leaves its sessions readable; their tools answer WORKSPACE_NOT_FOUND', async () => {
  const s = await createSession(rig, 'shell');
  const del = await rig.api(`/api/workspaces/${rig.ws}`, { method: 'DELETE' });
  expect(del.status).toBe(200);
  await waitFor('the workspace to be gone', async () => (await rig.api(`/api/workspaces/${rig.ws}`)).status === 404, 60_000);
  const r = await (await send(rig, s.id, 'echo hi')).json();
  expect(r.finishReason).toBe('stop');
  expect(r.toolCalls[0].output).toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
  expect((await rig.api(`/api/agent/sessions/${s.id}`)).status).toBe(200);
}, 90_000);
