// The single-binary deployment: `bun run build` output serves every service with its embedded migrations.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NAMES } from '../../src/platform/config';
import { TEST_SECRET } from '../helpers/platform';
import { keelBinary } from '../helpers/once';
import { startKeel, type KeelProcess } from '../helpers/process';
import { waitFor } from '../helpers/wait';

const dir = mkdtempSync(join(tmpdir(), 'keel-bin-'));
let binary: string;
let keel: KeelProcess;

beforeAll(async () => {
  // Built once per test run, shared with the other binary test (helpers/once.ts).
  binary = await keelBinary();
  // Run it from an empty directory so nothing can come from the source tree.
  keel = await startKeel([binary], { APP_DATA_DIR: join(dir, 'data') }, [...SERVICE_NAMES]);
}, 180_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
});

test('the build is one executable file', () => {
  expect(existsSync(binary)).toBe(true);
});

test('every service answers /health and /version from the compiled binary', async () => {
  for (const name of SERVICE_NAMES) {
    const health = await fetch(keel.urls[name] + '/health');
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', version: expect.any(String) });
    const version = await (await fetch(keel.urls[name] + '/version')).json();
    expect(version).toMatchObject({ component: name, commit: expect.any(String), train: expect.any(String), version: expect.any(String) });
    expect(version.commit).not.toBe('dev');
  }
});

test('its embedded migrations ran: each service that keeps data has its tables', () => {
  const { Database } = require('bun:sqlite');
  const db = new Database(join(dir, 'data', 'keel.db'), { readonly: true });
  const names = (db.query("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((r) => r.name);
  db.close();
  expect(names).toContain('__drizzle_migrations');
  for (const service of ['workspaces', 'catalog', 'identity']) {
    expect(names.some((n) => n.startsWith(`${service}_`))).toBe(true);
  }
});

test('the binary mints tokens with the same secret', () => {
  const r = Bun.spawnSync([binary, 'token', '--sub', 'alice', '--ttl', '5m'], { env: { ...process.env, APP_API_SECRET: TEST_SECRET, APP_DATA_DIR: join(dir, 'data') }, stdout: 'pipe' });
  expect(r.exitCode).toBe(0);
  expect(r.stdout.toString().trim().split('.')).toHaveLength(3);
});

test('the binary runs the same CLI: --version names its commit, a wrong command exits 2 with the usage', () => {
  const version = Bun.spawnSync([binary, '--version'], { stdout: 'pipe', stderr: 'pipe' });
  expect(version.exitCode).toBe(0);
  expect(version.stdout.toString()).toMatch(/^keel \d+\.\d+\.\d+ \(commit (?!dev\b)\S+\)\n$/);
  const wrong = Bun.spawnSync([binary, 'launch'], { stdout: 'pipe', stderr: 'pipe' });
  expect(wrong.exitCode).toBe(2);
  expect(wrong.stderr.toString()).toContain('usage:\n  keel [serve]');
});

test("it carries keeld: a workspace's processes start under the workspace daemon", async () => {
  const token = Bun.spawnSync([binary, 'token', '--sub', 'alice', '--ttl', '5m'], { env: { ...process.env, APP_API_SECRET: TEST_SECRET, APP_DATA_DIR: join(dir, 'data') }, stdout: 'pipe' }).stdout.toString().trim();
  const api = (path: string, init: RequestInit = {}) => fetch(keel.urls.workspaces + path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });
  const created = (await (await api('/api/workspaces', { method: 'POST', body: JSON.stringify({ name: 'bin-keeld', template: 'minimal' }) })).json()) as { id: string };
  try {
    await waitFor('the workspace to run', async () => ((await (await api(`/api/workspaces/${created.id}`)).json()) as { status: string }).status === 'running', 60_000);
    const res = await api(`/api/workspaces/${created.id}/exec`, { method: 'POST', body: JSON.stringify({ command: 'cat /proc/$PPID/comm; ls -l /.keel/keeld' }) });
    const out = ((await res.json()) as { stdout: string }).stdout;
    expect(out).toMatch(/^keeld\n-r-xr-xr-x /);
  } finally {
    await api(`/api/workspaces/${created.id}`, { method: 'DELETE' });
  }
}, 90_000);

test('SIGTERM stops the binary cleanly', async () => {
  expect(await keel.stop()).toBe(0);
});
