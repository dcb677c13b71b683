// Templates people bring, built for real on the test engine: a Dockerfile FROM keel/minimal that adds a
// file and a user makes workspaces whose exec sees both; the build's log follows live over SSE; a
// failing RUN ends `failed` naming its step; readyCommand holds `running` back; another actor cannot
// use a private template; bad input, the quota and names are refused before anything is built.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader } from '../../helpers/sse';
import { closeAndClean, errorCode, waitStatus } from '../../helpers/workspaces';
import { waitFor } from '../../helpers/docker';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
const post = (path: string, json: unknown, as = 'alice') => p.api('workspaces', path, { method: 'POST', json, as });
const get = async (path: string, as = 'alice') => {
  const res = await p.api('workspaces', path, { as });
  return { status: res.status, body: (await res.json()) as any };
};

const HELLO = `FROM keel/minimal
USER root
COPY hello.txt /opt/hello.txt
RUN echo 'dev:x:1500:1500:dev:/workspace:/bin/sh' >> /etc/passwd && echo 'dev:x:1500:' >> /etc/group
USER 1500:1500
`;

/** Waits until the template's build ended; its view. */
const built = (id: string) => waitFor(`template ${id} built`, async () => {
  const t = (await get(`/api/templates/${id}`)).body;
  return t.status === 'building' ? null : t;
}, 120_000);

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '27900-27949', APP_QUOTA_TEMPLATES: '4' } });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
}, 60_000);

describe('a template from a Dockerfile', () => {
  let id = '';
  test('POST answers 202 building; its log follows live over SSE to a done event; the template is ready at version 1', async () => {
    const res = await post('/api/templates', { name: 'hello', dockerfile: HELLO, files: { 'hello.txt': 'hello from the template\n' } });
    expect(res.status).toBe(202);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ name: 'hello', status: 'building' });
    id = body.id;
    const log = await p.api('workspaces', `/api/templates/${id}/builds/${body.buildId}/logs?follow=true`, { as: 'alice' });
    expect(log.status).toBe(200);
    expect(log.headers.get('content-type')).toContain('text/event-stream');
    const frames = await sseReader(log).collect((f) => f.event === 'done', 120_000);
    const lines = frames.filter((f) => !f.event && f.data).map((f) => JSON.parse(f.data!) as { timestamp: string; message: string });
    expect(lines.some((l) => /^Step \d+\/\d+ : COPY hello.txt/.test(l.message))).toBe(true);
    expect(lines.every((l) => !Number.isNaN(Date.parse(l.timestamp)))).toBe(true);
    expect(JSON.parse(frames.at(-1)!.data!)).toEqual({ status: 'ready' });
    const t = await built(id);
    expect(t).toMatchObject({ id, name: 'hello', owner: 'alice', public: false, builtIn: false, status: 'ready', reason: null, version: 1 });
    // The whole log stays readable once the build ended.
    const again = (await get(`/api/templates/${id}/builds/${body.buildId}/logs`)).body;
    expect(again.status).toBe('ready');
    expect(again.lines.length).toBe(lines.length);
  }, 180_000);

  test('a workspace made from it runs as the image\'s user and sees the file; the list shows it beside the built-ins', async () => {
    const res = await post('/api/workspaces', { name: 'from-hello', template: 'hello' });
    expect(res.status).toBe(201);
    const ws = (await res.json()) as { id: string };
    await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
    // Its volume is its user's: /workspace was made 1500's at the build (workspaces run with no capabilities).
    const r = (await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'cat /opt/hello.txt; id -u; id -un; touch /workspace/mine && stat -c %u /workspace/mine' })).json()) as any;
    expect(r).toMatchObject({ exitCode: 0, stdout: 'hello from the template\n1500\ndev\n1500\n' });
    const list = (await get('/api/templates')).body.templates as any[];
    expect(list.filter((t) => t.builtIn).map((t) => t.name).sort()).toEqual(['bun-typescript', 'minimal']);
    expect(list.find((t) => t.name === 'hello')).toMatchObject({ builtIn: false, public: false, owner: 'alice', status: 'ready', version: 1 });
  }, 120_000);

  test("another actor cannot see or use a private template (404), and names stay each actor's own", async () => {
    expect((await get(`/api/templates/${id}`, 'bob')).status).toBe(404);
    const res = await post('/api/workspaces', { name: 'bobs-hello', template: 'hello' }, 'bob');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('TEMPLATE_NOT_FOUND');
    expect(((await get('/api/templates', 'bob')).body.templates as any[]).some((t) => t.name === 'hello')).toBe(false);
    expect((await p.api('workspaces', `/api/templates/${id}`, { method: 'DELETE', as: 'bob' })).status).toBe(404);
  });

  test('a rebuild is version 2; delete leaves the list while a workspace made from it keeps running', async () => {
    const res = await post(`/api/templates/${id}/builds`, {});
    expect(res.status).toBe(202);
    expect((await built(id)).version).toBe(2);
    const del = await p.api('workspaces', `/api/templates/${id}`, { method: 'DELETE', as: 'alice' });
    expect(await del.json()).toEqual({ id, deleted: true });
    expect((await get(`/api/templates/${id}`)).status).toBe(404);
    const ws = ((await get('/api/workspaces')).body.workspaces as any[]).find((w) => w.name === 'from-hello');
    expect((await post(`/api/workspaces/${ws.id}/restart`, {})).status).toBe(200);
    await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 60_000 });
    expect(((await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'cat /opt/hello.txt' })).json()) as any).stdout).toBe('hello from the template\n');
    // The name is free again.
    const anew = await post('/api/templates', { name: 'hello', dockerfile: 'FROM keel/minimal\n' });
    expect(anew.status).toBe(202);
    await built(((await anew.json()) as any).id);
  }, 180_000);
});

test('a failing RUN ends the template failed, its reason naming the step; a workspace from it is 409 TEMPLATE_NOT_READY', async () => {
  const res = await post('/api/templates', { name: 'broken', dockerfile: 'FROM keel/minimal\nRUN echo before\nRUN exit 3\n' });
  const { id } = (await res.json()) as any;
  const t = await built(id);
  expect(t.status).toBe('failed');
  expect(t.reason).toMatch(/^Step 3\/\d+ : RUN exit 3: .*returned a non-zero code: 3/);
  expect(t.version).toBe(0);
  const ws = await post('/api/workspaces', { name: 'from-broken', template: 'broken' });
  expect(ws.status).toBe(409);
  expect(await errorCode(ws)).toBe('TEMPLATE_NOT_READY');
}, 120_000);

test('readyCommand holds the workspace back from running until it exits 0', async () => {
  const res = await post('/api/templates', {
    name: 'slow-ready',
    dockerfile: 'FROM keel/minimal\n',
    startCommand: 'sleep 2; touch /tmp/ready; while :; do sleep 3600; done',
    readyCommand: 'test -f /tmp/ready',
  });
  await built(((await res.json()) as any).id);
  const ws = (await (await post('/api/workspaces', { name: 'waits-ready', template: 'slow-ready' })).json()) as { id: string };
  await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  // Running only once the file the start command makes is there.
  const r = (await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'test -f /tmp/ready && echo ready' })).json()) as any;
  expect(r.stdout).toBe('ready\n');
}, 120_000);

test("a snapshot becomes a template: its file system in a new workspace; another actor's snapshot is 404", async () => {
  const src = (await (await post('/api/workspaces', { name: 'snap-source', template: 'minimal' })).json()) as { id: string };
  await waitStatus(p, src.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  await post(`/api/workspaces/${src.id}/exec`, { command: 'echo kept-in-the-image > /tmp/marker' });
  const snap = (await (await post(`/api/workspaces/${src.id}/snapshots`, { name: 'for-a-template' })).json()) as { id: string };
  expect((await post(`/api/snapshots/${snap.id}/template`, { name: 'from-snap' }, 'bob')).status).toBe(404);
  const res = await post(`/api/snapshots/${snap.id}/template`, { name: 'from-snap' });
  expect(res.status).toBe(202);
  const t = await built(((await res.json()) as any).id);
  expect(t).toMatchObject({ status: 'ready', version: 1, user: '1000:1000', workdir: '/workspace' });
  const ws = (await (await post('/api/workspaces', { name: 'from-snap-1', template: 'from-snap' })).json()) as { id: string };
  await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  const r = (await (await post(`/api/workspaces/${ws.id}/exec`, { command: 'cat /tmp/marker; echo "[$KEEL_CODE_SECRET]" | grep -c "^\\[.\\+\\]$"' })).json()) as any;
  // The file system came along; the workspace has a code-server secret of its own (not empty).
  expect(r.stdout).toBe('kept-in-the-image\n1\n');
}, 240_000);

describe('refused before anything is built', () => {
  const refused = async (body: unknown, code: string, status: number) => {
    const res = await post('/api/templates', body);
    expect(res.status).toBe(status);
    const answer = (await res.json()) as any;
    expect(answer.error.code).toBe(code);
    return answer;
  };
  test('a files path that is absolute or leaves the context is 400', async () => {
    await refused({ name: 'esc', dockerfile: 'FROM keel/minimal\n', files: { '../etc/passwd': 'x' } }, 'INVALID_REQUEST', 400);
    await refused({ name: 'abs', dockerfile: 'FROM keel/minimal\n', files: { '/etc/passwd': 'x' } }, 'INVALID_REQUEST', 400);
    await refused({ name: 'keels', dockerfile: 'FROM keel/minimal\n', files: { '.keel-root/workspace/x': 'x' } }, 'INVALID_REQUEST', 400);
  });
  test('RUN --mount, --network, ADD from a URL and a registry at an address are refused naming their line', async () => {
    const res = await post('/api/templates', { name: 'mount', dockerfile: 'FROM keel/minimal\nRUN --mount=type=bind,source=/,target=/host cat /host/etc/shadow\n' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.details.line).toBe(2);
    await refused({ name: 'net', dockerfile: 'FROM keel/minimal\nRUN --network=host wget http://169.254.169.254/\n' }, 'INVALID_REQUEST', 400);
    await refused({ name: 'url', dockerfile: 'FROM keel/minimal\nADD http://169.254.169.254/latest/meta-data /m\n' }, 'INVALID_REQUEST', 400);
    // A base pulled by the engine on the host's network from an address: refused before the engine sees it.
    expect((await refused({ name: 'reg', dockerfile: 'FROM 169.254.169.254:80/latest\n' }, 'INVALID_REQUEST', 400)).error.details).toMatchObject({ line: 1 });
  });
  test('a context past APP_TEMPLATE_CONTEXT_BYTES is 400; unknown fields 400; built-in and taken names 409; public is for admins', async () => {
    const big = await refused({ name: 'big', dockerfile: 'FROM keel/minimal\n', files: { 'a.bin': 'base64:' + Buffer.alloc(65 * 1024 * 1024).toString('base64') } }, 'INVALID_REQUEST', 400);
    expect(JSON.stringify(big)).not.toContain('AAAA');
    // A body past what any context allows is not read to its end.
    await refused({ name: 'huge', dockerfile: 'FROM keel/minimal\n', files: { 'a.txt': 'x'.repeat(100 * 1024 * 1024) } }, 'PAYLOAD_TOO_LARGE', 413);
    await refused({ name: 'odd', dockerfile: 'FROM keel/minimal\n', privileged: true }, 'INVALID_REQUEST', 400);
    // Past the operator's bounds (defaults: 4 CPUs, 8192 MB), admins included.
    expect((await refused({ name: 'greedy', dockerfile: 'FROM keel/minimal\n', cpu: 5 }, 'INVALID_REQUEST', 400)).error.details).toMatchObject({ property: '/cpu', limit: 4 });
    const huge = await post('/api/templates', { name: 'greedy', dockerfile: 'FROM keel/minimal\n', memoryMb: 8193 }, 'admin');
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as any).error.details).toMatchObject({ property: '/memoryMb', limit: 8192 });
    await refused({ name: 'minimal', dockerfile: 'FROM keel/minimal\n' }, 'TEMPLATE_EXISTS', 409);
    await refused({ name: 'broken', dockerfile: 'FROM keel/minimal\n' }, 'TEMPLATE_EXISTS', 409);
    await refused({ name: 'for-all', dockerfile: 'FROM keel/minimal\n', public: true }, 'FORBIDDEN', 403);
  }, 60_000);
  test('APP_QUOTA_TEMPLATES: past it 429 QUOTA_EXCEEDED, nothing stored', async () => {
    const mine = ((await get('/api/templates')).body.templates as any[]).filter((t) => !t.builtIn).length;
    for (let i = mine; i < 4; i++) expect((await post('/api/templates', { name: `fill-${i}`, dockerfile: 'FROM keel/minimal\n' })).status).toBe(202);
    const answer = await refused({ name: 'one-too-many', dockerfile: 'FROM keel/minimal\n' }, 'QUOTA_EXCEEDED', 429);
    expect(answer.error.details).toMatchObject({ quota: 'templates', limit: 4 });
    expect(((await get('/api/templates')).body.templates as any[]).some((t) => t.name === 'one-too-many')).toBe(false);
  }, 60_000);
});
