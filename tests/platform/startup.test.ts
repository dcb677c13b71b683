// Start-up and shutdown of the real process: configuration errors, the dev secret, graceful stop.
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyHs256 } from '../../src/platform/auth/workspace-token';
import { BUN, ROOT, startKeel } from '../helpers/process';
import { freePortsEnv } from '../helpers/platform';

const run = (env: Record<string, string>) => {
  const r = Bun.spawnSync([BUN, 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, APP_DATA_DIR: mkdtempSync(join(tmpdir(), 'keel-cfg-')), ...freePortsEnv(), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  return { code: r.exitCode, stderr: r.stderr.toString() };
};

describe('a bad configuration stops start-up with one line naming the variable', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['a port that is not a number', { APP_CATALOG_PORT: 'eighty' }, 'APP_CATALOG_PORT'],
    ['a port out of range', { APP_IDENTITY_PORT: '70000' }, 'APP_IDENTITY_PORT'],
    ['an unknown service', { APP_SERVICES: 'workspaces,billing' }, 'APP_SERVICES'],
    ['a relative media root', { APP_MEDIA_ROOTS: 'media/films' }, 'APP_MEDIA_ROOTS'],
    ['a backwards workspace port range', { APP_WORKSPACE_PORT_RANGE: '30000-20000' }, 'APP_WORKSPACE_PORT_RANGE'],
    ['an identity access TTL past 15 minutes', { APP_IDENTITY_ACCESS_TTL_S: '901' }, 'APP_IDENTITY_ACCESS_TTL_S'],
    ['a service variable of a service not started still names itself when that service is started', { APP_SERVICES: 'catalog', APP_PROBE_TIMEOUT_MS: 'soon' }, 'APP_PROBE_TIMEOUT_MS'],
    ['a bus that is neither memory nor NATS', { APP_BUS: 'redis://x' }, 'APP_BUS'],
    ['a dead-letter threshold of zero attempts', { APP_BUS_MAX_DELIVER: '0' }, 'APP_BUS_MAX_DELIVER'],
    ['a database URL that is not PostgreSQL', { APP_DATABASE_URL: 'mysql://keel:pw@127.0.0.1/keel' }, 'APP_DATABASE_URL'],
    ['a PostgreSQL that does not answer', { APP_DATABASE_URL: 'postgres://keel:hunter2-db@127.0.0.1:1/keel', APP_SERVICES: 'catalog' }, 'APP_DATABASE_URL'],
    ['a malformed secret', { APP_API_SECRET: 'abc123' }, 'APP_API_SECRET'],
    ['no secret in production', { NODE_ENV: 'production' }, 'APP_API_SECRET'],
  ];
  for (const [name, env, variable] of cases) {
    test(name, () => {
      const r = run(env);
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(`invalid configuration: ${variable}: `);
    });
  }
  test('the malformed secret is not repeated in the reason', () => {
    expect(run({ APP_API_SECRET: 'zz-not-hex-zz' }).stderr).not.toContain('zz-not-hex-zz');
  });
  test("the database URL's password is not repeated, whether the URL is refused or the server is", () => {
    expect(run({ APP_DATABASE_URL: 'mysql://keel:hunter2-db@127.0.0.1/keel' }).stderr).not.toContain('hunter2-db');
    expect(run({ APP_DATABASE_URL: 'postgres://keel:hunter2-db@127.0.0.1:1/keel', APP_SERVICES: 'catalog' }).stderr).not.toContain('hunter2-db');
  });
});

test('dev mode without a secret generates one, keeps it private, and prints a working admin token', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-dev-'));
  const keel = await startKeel([BUN, 'src/main.ts'], { APP_DATA_DIR: dataDir, APP_API_SECRET: '' }, ['workers']);
  try {
    const secret = readFileSync(join(dataDir, 'api-secret'), 'utf8').trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(join(dataDir, 'api-secret')).mode & 0o777).toBe(0o600);
  } finally {
    expect(await keel.stop()).toBe(0);
  }
  // Only printed when the workspace API runs; start it once more to see the token.
  const again = await startKeel([BUN, 'src/main.ts'], { APP_DATA_DIR: dataDir, APP_API_SECRET: '' }, ['workspaces']);
  try {
    const token = /Dev admin token \(24 h\)[^\n]*\n(\S+)/.exec(again.stdout())?.[1];
    expect(token).toBeDefined();
    const secret = readFileSync(join(dataDir, 'api-secret'), 'utf8').trim();
    expect(verifyHs256(token!, secret, Date.now())).toMatchObject({ sub: 'admin', role: 'admin' });
  } finally {
    await again.stop();
  }
});

// A request in flight during SIGTERM is tested with real work in tests/workspaces/shutdown.test.ts.
test('SIGTERM stops every service, logs the stop and exits 0', async () => {
  const keel = await startKeel([BUN, 'src/main.ts'], {}, ['workers', 'sources']);
  expect((await fetch(keel.urls.workers + '/health')).status).toBe(200);
  expect(await keel.stop()).toBe(0);
  expect(keel.stderr()).toContain('"msg":"stopped"');
  await expect(fetch(keel.urls.sources + '/health')).rejects.toThrow();
});
