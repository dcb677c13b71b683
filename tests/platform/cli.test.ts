// The operator commands as an operator runs them: `bun src/cli.ts ...` as a process (the compiled
// binary runs the same module: tests/platform/binary.test.ts). Help and version on stdout with exit 0,
// a wrong command line with the usage on stderr and exit 2, `token` only with a secret that exists,
// `healthcheck` naming each service it checked.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyHs256 } from '../../src/platform/auth/workspace-token';
import { freePort } from '../../scripts/machine';
import pkg from '../../package.json';
import { startTestPlatform, TEST_SECRET, type TestPlatform } from '../helpers/platform';
import { BUN, ROOT } from '../helpers/process';

const dirs: string[] = [];
const emptyDataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'keel-cli-'));
  dirs.push(d);
  return d;
};

/**
 * Runs the CLI with only the environment given (plus PATH), as a fresh shell would. Not spawnSync:
 * the services `healthcheck` asks run in this process and must go on answering meanwhile.
 */
async function cli(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([BUN, 'src/cli.ts', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', APP_DATA_DIR: emptyDataDir(), ...env }, stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('help and version', () => {
  test.each([['--help'], ['-h']])('%s prints the usage, serve included, on stdout and exits 0', async (flag) => {
    const r = await cli([flag]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toStartWith('usage:\n');
    for (const cmd of ['keel [serve]', 'keel token --sub', 'keel healthcheck', 'keel image minimal|bun-typescript']) expect(r.stdout).toContain(cmd);
  });

  test('--version prints the package version on stdout and exits 0', async () => {
    const r = await cli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`keel ${pkg.version} (commit dev)\n`);
  });
});

describe('a wrong command line', () => {
  test.each([
    [['launch'], 'unknown command "launch"'],
    [['token'], '--sub is required'],
    [['token', '--sub', 'alice', '--ttl', 'soon'], '--ttl must look like 90s, 15m, 1h or 7d'],
    [['token', '--sub', 'alice', '--role', 'root'], '--role takes only admin'],
    [['token', '--sub', 'alice', '--colour'], "Unknown option '--colour'"],
    [['healthcheck', 'now'], 'healthcheck'],
    [['image', 'nope'], 'usage: keel image minimal|bun-typescript'],
    [['serve', '--port', '1'], 'serve takes no arguments'],
  ])('%p exits 2 with the problem and the usage on stderr, nothing on stdout', async (args, message) => {
    const r = await cli(args, { APP_API_SECRET: TEST_SECRET });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('usage:\n  keel [serve]');
  });
});

describe('token', () => {
  test('with neither APP_API_SECRET nor an api-secret in the data dir it fails saying so, and invents none', async () => {
    const dataDir = emptyDataDir();
    const r = await cli(['token', '--sub', 'alice'], { APP_DATA_DIR: dataDir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('no API secret to sign with: APP_API_SECRET is not set');
    expect(r.stderr).toContain(join(dataDir, 'api-secret'));
    expect(existsSync(join(dataDir, 'api-secret'))).toBe(false);
  });

  test("signs with the data dir's api-secret, the one a dev server wrote", async () => {
    const dataDir = emptyDataDir();
    const secret = 'b'.repeat(64);
    writeFileSync(join(dataDir, 'api-secret'), secret + '\n', { mode: 0o600 });
    const r = await cli(['token', '--sub', 'alice', '--ttl', '5m', '--role', 'admin'], { APP_DATA_DIR: dataDir });
    expect(r.code).toBe(0);
    const claims = verifyHs256(r.stdout.trim(), secret, Date.now());
    expect(claims).toMatchObject({ sub: 'alice', role: 'admin' });
    expect(claims.exp - claims.iat!).toBe(300);
  });

  test('signs with APP_API_SECRET when it is set', async () => {
    const r = await cli(['token', '--sub', 'bob'], { APP_API_SECRET: TEST_SECRET });
    expect(r.code).toBe(0);
    expect(verifyHs256(r.stdout.trim(), TEST_SECRET, Date.now()).sub).toBe('bob');
  });

  test('an api-secret file that holds no secret is refused, not replaced', async () => {
    const dataDir = emptyDataDir();
    writeFileSync(join(dataDir, 'api-secret'), 'not a secret\n');
    const r = await cli(['token', '--sub', 'alice'], { APP_DATA_DIR: dataDir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('does not hold 64 hexadecimal characters');
  });
});

describe('healthcheck', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['identity', 'sources'] });
  });
  afterAll(async () => {
    await p.close();
  });
  const portOf = (url: string) => new URL(url).port;

  test('names each service it checked, its URL and ok, and exits 0 when all answer', async () => {
    const env = { APP_API_SECRET: TEST_SECRET, APP_SERVICES: 'identity,sources', APP_IDENTITY_PORT: portOf(p.url('identity')), APP_SOURCES_PORT: portOf(p.url('sources')) };
    const r = await cli(['healthcheck'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`identity ${p.url('identity')}/health ok\nsources ${p.url('sources')}/health ok\n`);
  });

  test('a service that does not answer is named on stderr, and the exit is 1', async () => {
    const closed = String(await freePort());
    const env = { APP_API_SECRET: TEST_SECRET, APP_SERVICES: 'identity,catalog', APP_IDENTITY_PORT: portOf(p.url('identity')), APP_CATALOG_PORT: closed };
    const r = await cli(['healthcheck'], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`identity ${p.url('identity')}/health ok\n`);
    expect(r.stderr).toContain(`catalog http://127.0.0.1:${closed}/health not reachable`);
    expect(r.stderr).toContain('1 of 2 services not healthy');
  });
});
