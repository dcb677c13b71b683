// Processes through HTTP (CONTRACT.md, "The workspace as an agent's computer"): a command that
// outlives its request, its output kept and followed as SSE with ids and Last-Event-ID replay, a
// client that vanishes without harm, stdin, signals, the per-actor quota, ownership, and a restart
// of Keel that marks running processes lost.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader } from '../../helpers/sse';
import { createRunning, errorCode, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

const dataDir = mkdtempSync(join(tmpdir(), 'keel-processes-'));
const env = { APP_QUOTA_PROCESSES: '3' };
let p: TestPlatform | undefined;
let ws = '';

const base = () => `/api/workspaces/${ws}/processes`;
async function start(command: string, as = 'alice'): Promise<any> {
  const res = await p!.api('workspaces', base(), { method: 'POST', json: { command, name: 'job' }, as });
  expect(res.status).toBe(201);
  return res.json();
}
const view = async (id: string) => (await p!.api('workspaces', `${base()}/${id}`)).json() as Promise<any>;
/** Signals a process, retrying while it has not reported its pid yet (409 in the first milliseconds). */
const signal = (id: string, sig: string) =>
  waitFor(`signal ${sig} to reach ${id}`, async () => {
    const r = await p!.api('workspaces', `${base()}/${id}/signal`, { method: 'POST', json: { signal: sig } });
    return r.status === 200 ? r.json() : null;
  }, 10_000);
const waitEnded = (id: string) => waitFor(`process ${id} to end`, async () => ((await view(id)).status === 'exited' ? view(id) : null), 30_000);

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env, dataDir });
  ws = (await createRunning(p!, 'processes', { timeoutMs: 90_000 })).id;
}, 120_000);

afterAll(async () => {
  const instance = keelInstance(dataDir);
  await p?.close();
  await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

test('a started process outlives its request; its status ends with exit code and end time', async () => {
  const started = await start('echo out; echo err >&2; exit 3');
  expect(started).toMatchObject({ command: 'echo out; echo err >&2; exit 3', status: 'running', name: 'job' });
  expect(Date.parse(started.startedAt)).toBeGreaterThan(0);
  const done = await waitEnded(started.id);
  expect(done).toMatchObject({ id: started.id, status: 'exited', exitCode: 3 });
  expect(Date.parse(done.endedAt)).toBeGreaterThanOrEqual(Date.parse(started.startedAt));
  const out = await (await p!.api('workspaces', `${base()}/${started.id}/output`)).json();
  expect(out).toEqual({ stdout: 'out\n', stderr: 'err\n' });
  const list = (await (await p!.api('workspaces', base())).json()) as any;
  expect(list.processes.map((x: any) => x.id)).toContain(started.id);
});

test('following streams output with ids and ends with one exit event; Last-Event-ID replays after it', async () => {
  const { id } = await start('for i in 1 2 3 4; do echo line$i; sleep 0.2; done');
  const res = await p!.api('workspaces', `${base()}/${id}/output?follow=true`);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const frames = await sseReader(res).collect((f) => f.event === 'exit', 30_000);
  const lines = frames.filter((f) => f.event === 'stdout');
  expect(lines.map((f) => JSON.parse(f.data!).data).join('')).toBe('line1\nline2\nline3\nline4\n');
  const ids = frames.map((f) => Number(f.id));
  expect(ids).toEqual([...ids].sort((a, b) => a - b));
  expect(JSON.parse(frames.at(-1)!.data!)).toEqual({ exitCode: 0 });

  const second = lines[1]!.id!;
  const replay = await p!.api('workspaces', `${base()}/${id}/output?follow=true`, { headers: { 'last-event-id': second } });
  const again = await sseReader(replay).collect((f) => f.event === 'exit', 30_000);
  expect(again.filter((f) => f.event === 'stdout').map((f) => JSON.parse(f.data!).data).join('')).toBe('line3\nline4\n');
});

test('a process whose client vanished keeps running, and its output is all there afterwards', async () => {
  const { id } = await start('echo first; sleep 1; echo second; sleep 1; echo third');
  const controller = new AbortController();
  const res = await p!.api('workspaces', `${base()}/${id}/output?follow=true`, { signal: controller.signal });
  const reader = sseReader(res);
  expect((await reader.nextEvent(10_000))?.event).toBe('stdout');
  controller.abort();
  const done = await waitEnded(id);
  expect(done.exitCode).toBe(0);
  expect((await (await p!.api('workspaces', `${base()}/${id}/output`)).json()).stdout).toBe('first\nsecond\nthird\n');
});

test('stdin reaches the process; eof=true closes it', async () => {
  const { id } = await start('read name; echo "hello $name"; cat | wc -c');
  const w = await p!.api('workspaces', `${base()}/${id}/stdin`, { method: 'POST', body: 'keel\n' });
  expect(await w.json()).toEqual({ id, bytes: 5 });
  await p!.api('workspaces', `${base()}/${id}/stdin?eof=true`, { method: 'POST', body: 'abcdef' });
  const done = await waitEnded(id);
  expect(done.exitCode).toBe(0);
  const out = await (await p!.api('workspaces', `${base()}/${id}/output`)).json();
  expect(out.stdout.replace(/ +/g, ' ')).toBe('hello keel\n6\n');
});

test('a signal reaches the process and what it started; an ended process answers 409', async () => {
  const { id } = await start('sleep 301 & sleep 302');
  expect(await signal(id, 'TERM')).toEqual({ id, signalled: true });
  const done = await waitEnded(id);
  expect(done.exitCode).toBe(143);
  const ps = await p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', json: { command: 'ps -o args' } });
  expect(((await ps.json()) as any).stdout).not.toContain('sleep 301');
  const late = await p!.api('workspaces', `${base()}/${id}/signal`, { method: 'POST', json: { signal: 'KILL' } });
  expect(late.status).toBe(409);
  expect(await errorCode(late)).toBe('PROCESS_NOT_RUNNING');
  const bad = await p!.api('workspaces', `${base()}/${id}/signal`, { method: 'POST', json: { signal: 'STOP' } });
  expect(bad.status).toBe(400);
});

test('APP_QUOTA_PROCESSES running processes per actor; an ended one frees its place', async () => {
  const running = [await start('sleep 300'), await start('sleep 300'), await start('sleep 300')];
  const refused = await p!.api('workspaces', base(), { method: 'POST', json: { command: 'true' } });
  expect(refused.status).toBe(429);
  expect(((await refused.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'processes', limit: 3 } });
  for (const r of running) await signal(r.id, 'KILL');
  for (const r of running) await waitEnded(r.id);
  await waitEnded((await start('true')).id);
});

test("another actor's workspace and processes answer 404; an unknown process 404 PROCESS_NOT_FOUND", async () => {
  const { id } = await start('true');
  for (const path of [base(), `${base()}/${id}`, `${base()}/${id}/output`]) {
    const r = await p!.api('workspaces', path, { as: 'bob' });
    expect(r.status).toBe(404);
    expect(await errorCode(r)).toBe('WORKSPACE_NOT_FOUND');
  }
  expect((await p!.api('workspaces', base(), { method: 'POST', json: { command: 'true' }, as: 'bob' })).status).toBe(404);
  const unknown = await p!.api('workspaces', `${base()}/proc_nothing`);
  expect(await errorCode(unknown)).toBe('PROCESS_NOT_FOUND');
});

test('a restart of Keel marks processes that were running as lost, visibly', async () => {
  const { id } = await start('sleep 600');
  await p!.stop();
  p = await startTestPlatform({ services: ['workspaces'], env, dataDir });
  await waitStatus(p!, ws, 'running', { timeoutMs: 60_000 });
  const after = await view(id);
  expect(after).toMatchObject({ id, status: 'lost' });
  expect(after.endedAt).toBeString();
  const follow = await p!.api('workspaces', `${base()}/${id}/output?follow=true`);
  const frames = await sseReader(follow).collect((f) => f.event === 'exit', 10_000);
  expect(JSON.parse(frames.at(-1)!.data!)).toEqual({ exitCode: null, status: 'lost' });
  const signal = await p!.api('workspaces', `${base()}/${id}/signal`, { method: 'POST', json: { signal: 'KILL' } });
  expect(await errorCode(signal)).toBe('PROCESS_NOT_RUNNING');
}, 120_000);

test('a workspace that is not running answers 409 WORKSPACE_NOT_RUNNING to a start', async () => {
  const other = (await createRunning(p!, 'processes-stopped', { timeoutMs: 90_000 })).id;
  expect((await p!.api('workspaces', `/api/workspaces/${other}/stop`, { method: 'POST' })).status).toBeLessThan(300);
  await waitStatus(p!, other, 'stopped', { timeoutMs: 60_000 });
  const res = await p!.api('workspaces', `/api/workspaces/${other}/processes`, { method: 'POST', json: { command: 'true' } });
  expect(res.status).toBe(409);
  expect(await errorCode(res)).toBe('WORKSPACE_NOT_RUNNING');
}, 120_000);
