// The test commands themselves, run as a developer runs them from a fresh shell: a plain
// `bun test <folder>` prepares the machine as `npm test` does (bunfig's preload), and the command lines
// of the tiers that need no machine (`npm run test:unit` = `bun test tests/unit`, `npm run test:service`
// = `bun test tests/service`) prepare nothing, so they run where there is no engine, no nats-server,
// no PostgreSQL and no apt at all.
import { expect, test } from 'bun:test';
import { dirname } from 'node:path';
import { BUN, ROOT } from '../helpers/process';

/** `bun test <args>` from the checkout with `env` and none of this run's preparation. */
async function bunTest(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([BUN, 'test', ...args], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out: stdout + stderr };
}

test('a plain `bun test` of one file prepares the machine itself and passes, with no DOCKER_HOST set', async () => {
  const r = await bunTest(['tests/identity/jwks.test.ts'], { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' });
  expect(r.out).toMatch(/keel: engine \S+ \(/);
  expect(r.out).toContain(' 0 fail');
  expect(r.code).toBe(0);
}, 60_000);

test('`bun test tests/unit` needs no engine, nats-server or apt: it runs with only bun on the PATH', async () => {
  // PATH holds bun and nothing else: preparing the machine would fail here (no apt-get, dockerd, nats-server).
  const r = await bunTest(['tests/unit/workers'], { PATH: dirname(BUN), HOME: process.env.HOME ?? '/root', DOCKER_HOST: 'unix:///nonexistent/keel.sock' });
  expect(r.out).not.toContain('keel: engine');
  expect(r.out).not.toContain('cannot prepare the test machine');
  expect(r.out).toContain(' 0 fail');
  expect(r.code).toBe(0);
}, 60_000);

test('`bun test tests/service` needs no engine, nats-server or apt either: services on a temp SQLite file and the memory engine', async () => {
  const r = await bunTest(['tests/service'], { PATH: dirname(BUN), HOME: process.env.HOME ?? '/root', DOCKER_HOST: 'unix:///nonexistent/keel.sock' });
  expect(r.out).not.toContain('keel: engine');
  expect(r.out).not.toContain('cannot prepare the test machine');
  expect(r.out).toContain(' 0 fail');
  expect(r.code).toBe(0);
}, 60_000);
