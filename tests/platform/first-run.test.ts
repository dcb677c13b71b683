// A new user's first run, as `bun run dev` (the npm script) does it: the machine is prepared, the
// platform starts on a fresh data dir with a generated secret, says in one line which engine it
// uses, prints the admin token on a line of its own, and a workspace of the default template
// created with that token reaches running and runs TypeScript (on this run's bun-typescript image,
// built once for the suite by tests/helpers/once.ts). DOCKER_HOST points at the shared
// test engine so that no second dockerd is started beside it (tests/platform/first-run-machine
// tests starting one); Ctrl-C (SIGINT to the process group) stops everything and leaves the engine.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTestEnv } from '../helpers/platform';
import { keelInstance, removeInstanceObjects, waitFor } from '../helpers/docker';
import { engineAnswers } from '../../scripts/machine';
import { bunTypescriptImage } from '../helpers/once';

const ROOT = join(import.meta.dir, '../..');
const shared = requireTestEnv('DOCKER_HOST');
const dataDir = mkdtempSync(join(tmpdir(), 'keel-first-run-'));
let dev: ChildProcess;
let out = '';
let err = '';
let exitCode: number | null = null;
const urls: Record<string, string> = {};

beforeAll(async () => {
  const { tag } = await bunTypescriptImage();
  const env: Record<string, string | undefined> = { ...process.env, APP_DATA_DIR: dataDir, DOCKER_HOST: shared, APP_WORKSPACE_BUN_IMAGE: tag, APP_LOG_LEVEL: 'info' };
  for (const k of ['APP_API_SECRET', 'NODE_ENV', 'APP_SERVICES', 'APP_QUIET_TOKEN']) delete env[k]; // as a new user has it
  for (const s of ['WORKSPACES', 'CATALOG', 'SOURCES', 'WORKERS', 'IDENTITY', 'PLAYBACK']) env[`APP_${s}_PORT`] = '0'; // beside other runs on this machine
  const base = 30000 + Math.floor(Math.random() * 300) * 100; // workspace host ports no other run on this engine holds
  env.APP_WORKSPACE_PORT_RANGE = `${base}-${base + 99}`;
  // Its own process group, so SIGINT reaches dev and the platform as Ctrl-C in a terminal does.
  dev = spawn(process.execPath, ['run', 'dev'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  dev.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  dev.stderr!.on('data', (b: Buffer) => {
    err += b.toString();
    for (const m of err.matchAll(/"msg":"service listening".*?"service":"(\w+)","url":"([^"]+)"/g)) urls[m[1]!] = m[2]!;
  });
  dev.on('exit', (code, sig) => (exitCode = code ?? (sig ? 128 : 0)));
}, 240_000);

afterAll(async () => {
  if (exitCode === null) {
    process.kill(-dev.pid!, 'SIGKILL');
  }
  if (existsSync(join(dataDir, 'workspaces-instance'))) await removeInstanceObjects(keelInstance(dataDir));
  rmSync(dataDir, { recursive: true, force: true });
});

describe('bun run dev on a fresh data dir', () => {
  let token = '';

  test('says which engine it uses, then prints the admin token on a line of its own', async () => {
    await waitFor('the token line', () => exitCode !== null || /^[\w-]+\.[\w-]+\.[\w-]+$/m.test(out), 60_000, 100);
    expect(exitCode).toBeNull();
    const lines = out.split('\n');
    expect(lines.filter((l) => l.startsWith('Engine: '))).toEqual([`Engine: ${shared} (DOCKER_HOST)`]);
    const at = lines.findIndex((l) => l.startsWith('Dev admin token'));
    expect(at).toBeGreaterThanOrEqual(0);
    token = lines[at + 1]!;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    await waitFor('every service to listen', () => Object.keys(urls).length === 6 || exitCode !== null, 30_000);
    expect(Object.keys(urls).sort()).toEqual(['catalog', 'identity', 'playback', 'sources', 'workers', 'workspaces']);
    expect(await engineAnswers(shared)).toBe(true);
  }, 90_000);

  test('a bun-typescript workspace created with that token reaches running and runs TypeScript', async () => {
    const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(urls.workspaces + path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
    const res = await api('/api/workspaces', { method: 'POST', json: { name: 'first', template: 'bun-typescript' } });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const w = await waitFor(`workspace ${id} to settle`, async () => {
      const v = (await (await api(`/api/workspaces/${id}`)).json()) as any;
      return v.status === 'running' || v.status === 'failed' ? v : null;
    }, 120_000, 250);
    expect(w.reason ?? null).toBeNull();
    expect(w.status).toBe('running');
    const ex = await api(`/api/workspaces/${id}/exec`, { method: 'POST', json: { command: `echo 'const s: string = "typescript ok"; console.log(s)' > /tmp/x.ts && bun run /tmp/x.ts`, timeout: 60_000 } });
    expect(ex.status).toBe(200);
    expect(((await ex.json()) as any).stdout).toBe('typescript ok\n');
    expect((await api(`/api/workspaces/${id}?volumes=true`, { method: 'DELETE' })).status).toBe(200);
  }, 150_000);

  test('Ctrl-C stops dev and the platform with exit 0, and leaves the engine running', async () => {
    process.kill(-dev.pid!, 'SIGINT');
    await waitFor('dev to exit', () => exitCode !== null, 30_000);
    expect(exitCode).toBe(0);
    expect(err).toContain('"msg":"stopped"');
    expect(await engineAnswers(shared)).toBe(true);
  }, 40_000);
});

describe('bun scripts/dev.ts under a service manager', () => {
  test('a SIGTERM sent to dev alone is passed on: the platform stops cleanly and dev exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-first-run-term-'));
    const env: Record<string, string | undefined> = { ...process.env, APP_DATA_DIR: dir, DOCKER_HOST: shared, APP_SERVICES: 'workers', APP_WORKERS_PORT: '0', APP_LOG_LEVEL: 'info' };
    delete env.NODE_ENV;
    const child = spawn(process.execPath, ['scripts/dev.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
    let code: number | null = null;
    child.on('exit', (c, sig) => (code = c ?? (sig ? 128 : 0)));
    try {
      await waitFor('the workers service to listen', () => log.includes('"msg":"service listening"') || code !== null, 30_000);
      child.kill('SIGTERM');
      await waitFor('dev to exit', () => code !== null, 30_000);
      expect(code as number | null).toBe(0);
      expect(log).toContain('SIGTERM received, shutting down');
      expect(log).toContain('"msg":"stopped"');
    } finally {
      if (code === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
