// Terminals through HTTP and WebSocket (CONTRACT.md, "The workspace as an agent's computer"): a real
// PTY in a `minimal` workspace (busybox sh), typed into and read as a user's terminal would, resized,
// attached with single-use tickets, detached and reattached with what was written meanwhile replayed;
// ownership and a workspace that is not running.
import { afterAll, beforeAll, expect, setSystemTime, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { createRunning, errorCode, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

const dataDir = mkdtempSync(join(tmpdir(), 'keel-terminals-'));
let p: TestPlatform | undefined;
let ws = '';

const base = () => `/api/workspaces/${ws}/terminals`;
async function open(body: Record<string, unknown> = {}, as = 'alice'): Promise<{ id: string; ticket: string; expiresAt: string }> {
  const res = await p!.api('workspaces', base(), { method: 'POST', json: body, as });
  expect(res.status).toBe(201);
  return res.json() as any;
}
const attachUrl = (id: string, ticket: string) => `${p!.url('workspaces').replace(/^http/, 'ws')}${base()}/${id}?ticket=${encodeURIComponent(ticket)}`;

/** A WebSocket to a terminal, as xterm.js would hold it: everything received, decoded, in `text`. */
async function connect(id: string, ticket: string) {
  const sock = new WebSocket(attachUrl(id, ticket));
  sock.binaryType = 'arraybuffer';
  const dec = new TextDecoder();
  const state = { text: '', closed: false };
  sock.onmessage = (e) => (state.text += typeof e.data === 'string' ? e.data : dec.decode(new Uint8Array(e.data as ArrayBuffer), { stream: true }));
  sock.onclose = () => (state.closed = true);
  await new Promise<void>((resolve, reject) => {
    sock.onopen = () => resolve();
    sock.onerror = () => reject(new Error('the WebSocket did not open'));
  });
  return {
    state,
    type: (s: string) => sock.send(new TextEncoder().encode(s)),
    resize: (cols: number, rows: number) => sock.send(JSON.stringify({ type: 'resize', cols, rows })),
    sees: (re: RegExp, ms = 20_000) => waitFor(`the terminal to show ${re}`, async () => (re.test(state.text) ? state.text : null), ms),
    close: () => sock.close(),
  };
}

/** The upgrade request a browser sends, by hand, to read the status a refused upgrade answers. */
const upgrade = (id: string, ticket: string) =>
  fetch(`${p!.url('workspaces')}${base()}/${id}?ticket=${encodeURIComponent(ticket)}`, {
    headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
  });

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_QUOTA_STREAMS: '8' }, dataDir });
  ws = (await createRunning(p!, 'terminals', { timeoutMs: 90_000 })).id;
}, 120_000);

afterAll(async () => {
  const instance = keelInstance(dataDir);
  await p?.close();
  await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

test('a command typed into the terminal shows its output', async () => {
  const t = await open();
  expect(t.id).toMatch(/^term_/);
  expect(Date.parse(t.expiresAt) - Date.now()).toBeGreaterThan(30_000);
  const term = await connect(t.id, t.ticket);
  // The product is computed by the shell: the echo of the typed line alone cannot match.
  term.type('echo answer-$((6*7))\n');
  await term.sees(/answer-42/);
  term.close();
});

test('the terminal has the asked size, and a resize frame changes what stty size reports', async () => {
  const t = await open({ cols: 90, rows: 30 });
  const term = await connect(t.id, t.ticket);
  term.type('stty size\n');
  await term.sees(/\b30 90\b/);
  term.resize(120, 40);
  await Bun.sleep(200);
  term.type('stty size\n');
  await term.sees(/\b40 120\b/);
  term.close();
});

test('a ticket works once: a second upgrade with it answers 401', async () => {
  const t = await open();
  const term = await connect(t.id, t.ticket);
  const again = await upgrade(t.id, t.ticket);
  expect(again.status).toBe(401);
  expect(await errorCode(again)).toBe('UNAUTHORIZED');
  const forged = await upgrade(t.id, 'not-a-ticket');
  expect(forged.status).toBe(401);
  term.close();
});

test("the attach route's OpenAPI answers name its 401 (a bad ticket) and its 404", async () => {
  const doc = (await (await fetch(p!.url('workspaces') + '/openapi.json')).json()) as any;
  const attach = doc.paths['/api/workspaces/{id}/terminals/{tid}'].get;
  expect(attach.operationId).toBe('attachWorkspaceTerminal');
  expect(Object.keys(attach.responses)).toEqual(expect.arrayContaining(['101', '401', '404']));
  expect(attach.responses['401'].content['application/json'].schema.allOf[1].properties.error.properties.code.enum).toContain('UNAUTHORIZED');
  expect(attach.responses['404'].content['application/json'].schema.allOf[1].properties.error.properties.code.enum).toContain('TERMINAL_NOT_FOUND');
});

test('a terminal outlives its socket: a new ticket reattaches and first receives what was written meanwhile', async () => {
  const t = await open();
  const first = await connect(t.id, t.ticket);
  first.type('(for i in 1 2 3 4; do echo tick-$((i*11)); sleep 0.3; done) &\n');
  await first.sees(/tick-11/);
  first.close();
  await Bun.sleep(2_000);
  const res = await p!.api('workspaces', `${base()}/${t.id}/tickets`, { method: 'POST' });
  expect(res.status).toBe(201);
  const again = (await res.json()) as any;
  expect(again.id).toBe(t.id);
  const second = await connect(t.id, again.ticket);
  // Written while no socket was attached: it arrives as the replay, with nothing typed.
  await second.sees(/tick-44/, 5_000);
  expect(second.state.text).toContain('tick-33');
  second.type('echo still-$((2+3))\n');
  await second.sees(/still-5/);
  second.close();
});

test('a terminal whose process exits ends: its socket closes and a new ticket answers 404', async () => {
  const t = await open();
  const term = await connect(t.id, t.ticket);
  term.type('exit\n');
  await waitFor('the socket to close', async () => (term.state.closed ? true : null), 20_000);
  const res = await p!.api('workspaces', `${base()}/${t.id}/tickets`, { method: 'POST' });
  expect(res.status).toBe(404);
  expect(await errorCode(res)).toBe('TERMINAL_NOT_FOUND');
});

test("another actor's workspace and terminal answer 404", async () => {
  const t = await open();
  const opened = await p!.api('workspaces', base(), { method: 'POST', json: {}, as: 'bob' });
  expect(opened.status).toBe(404);
  expect(await errorCode(opened)).toBe('WORKSPACE_NOT_FOUND');
  const ticket = await p!.api('workspaces', `${base()}/${t.id}/tickets`, { method: 'POST', as: 'bob' });
  expect(ticket.status).toBe(404);
  expect(await errorCode(ticket)).toBe('WORKSPACE_NOT_FOUND');
});

test('a workspace that is not running answers 409 WORKSPACE_NOT_RUNNING', async () => {
  const other = (await createRunning(p!, 'terminals-stopped', { timeoutMs: 90_000 })).id;
  expect((await p!.api('workspaces', `/api/workspaces/${other}/stop`, { method: 'POST' })).status).toBeLessThan(300);
  await waitStatus(p!, other, 'stopped', { timeoutMs: 60_000 });
  const res = await p!.api('workspaces', `/api/workspaces/${other}/terminals`, { method: 'POST', json: {} });
  expect(res.status).toBe(409);
  expect(await errorCode(res)).toBe('WORKSPACE_NOT_RUNNING');
}, 150_000);

test('a live terminal holds one of its actor\'s stream slots: past APP_QUOTA_STREAMS a new one answers 429', async () => {
  const own = (await createRunning(p!, 'terminals-quota', { as: 'carol', timeoutMs: 90_000 })).id;
  const openAs = () => p!.api('workspaces', `/api/workspaces/${own}/terminals`, { method: 'POST', json: {}, as: 'carol' });
  for (let i = 0; i < 8; i++) expect((await openAs()).status).toBe(201);
  const past = await openAs();
  expect(past.status).toBe(429);
  expect(((await past.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'streams', limit: 8 } });
}, 120_000);

test('a ticket past its 60 seconds answers 401', async () => {
  const t = await open();
  // The service reads the time through Date.now() (this process's): 61 s on, for this one request.
  setSystemTime(new Date(Date.now() + 61_000));
  try {
    const late = await upgrade(t.id, t.ticket);
    expect(late.status).toBe(401);
    expect(await errorCode(late)).toBe('UNAUTHORIZED');
  } finally {
    setSystemTime();
  }
});
