// The `keel` CLI as users get it (the packed SDK's bin, run by node) and as a checkout runs it
// (`bun src/cli.ts ws ...`), against a real Keel: create/exec/list/cp/preview/delete with their
// exit codes and --json, login's config file, usage errors (2) and API errors (1), and `ws shell`
// attached to a pseudo-terminal (script(1)).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean } from '../helpers/workspaces';
import { nodeProject, REPO, run } from './sdk-helpers';

let p: TestPlatform;
let project: Awaited<ReturnType<typeof nodeProject>>;
let home: string;
let env: Record<string, string>;

beforeAll(async () => {
  requireTestEnv('DOCKER_HOST');
  [p, project] = await Promise.all([startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '23490-23579' } }), nodeProject()]);
  home = mkdtempSync(join(tmpdir(), 'keel-cli-home-'));
  // No config file of the machine's user is read or written: the config dir is the test's.
  env = { KEEL_URL: p.url('workspaces'), KEEL_TOKEN: p.token('alice'), XDG_CONFIG_HOME: home, HOME: home };
}, 120_000);
afterAll(async () => {
  await closeAndClean(p);
  project?.remove();
  if (home) rmSync(home, { recursive: true, force: true });
}, 60_000);

/** The packed bin, by node. */
const keel = (args: string[], extra: Record<string, string | undefined> = {}, stdin?: string) =>
  run(['node', join(project.dir, 'node_modules/.bin/keel'), ...args], { cwd: project.dir, env: { ...env, ...extra }, stdin });
/** The checkout's operator CLI, whose ws and login commands are the SDK's. */
const checkout = (args: string[], extra: Record<string, string | undefined> = {}) => run([process.execPath, 'src/cli.ts', ...args], { cwd: REPO, env: { ...env, ...extra } });

describe('keel ws', () => {
  let id: string;

  test('create --json waits until running and prints the API JSON; exec exits with the command code', async () => {
    const created = await keel(['ws', 'create', '--name', `cli-${Date.now().toString(36)}`, '--template', 'minimal', '--json']);
    expect(created.err).toBe('');
    expect(created.code).toBe(0);
    const ws = JSON.parse(created.out);
    expect(ws).toMatchObject({ status: 'running', template: 'minimal' });
    expect(ws.commands).toBeUndefined(); // the API's fields, not the SDK's methods
    id = ws.id;

    const ok = await keel(['ws', 'exec', id, '--', 'sh', '-c', 'echo "out $0"; echo err >&2; exit 3', 'x y']);
    expect(ok).toEqual({ code: 3, out: 'out x y\n', err: 'err\n' });
    const one = await keel(['ws', 'exec', id, '--cwd', '/tmp', '--env', 'A=b c', '--', 'echo $A; pwd']);
    expect(one).toEqual({ code: 0, out: 'b c\n/tmp\n', err: '' });
  }, 90_000);

  test('list (table and --json), cp both ways, preview', async () => {
    const table = await keel(['ws', 'list']);
    expect(table.code).toBe(0);
    expect(table.out.split('\n')[0]).toMatch(/^ID\s+NAME\s+STATUS\s+TEMPLATE$/);
    expect(table.out).toContain(id);
    const listed = await keel(['ws', 'list', '--json']);
    expect(JSON.parse(listed.out).workspaces.map((w: { id: string }) => w.id)).toContain(id);

    const local = join(home, 'up.bin');
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 31) & 255);
    writeFileSync(local, bytes);
    const up = await keel(['ws', 'cp', local, `${id}:/workspace/dir/up.bin`]);
    expect(up.code).toBe(0);
    const down = join(home, 'down.bin');
    expect((await keel(['ws', 'cp', `${id}:dir/up.bin`, down])).code).toBe(0);
    expect(Buffer.compare(readFileSync(down), Buffer.from(bytes))).toBe(0);
    const piped = await keel(['ws', 'cp', '-', `${id}:/workspace/piped.txt`], {}, 'from stdin\n');
    expect(piped.code).toBe(0);
    expect((await keel(['ws', 'cp', `${id}:piped.txt`, '-'])).out).toBe('from stdin\n');

    const logs = await keel(['ws', 'logs', id, '--tail', '50', '--json']);
    expect(logs.code).toBe(0);
    for (const line of logs.out.trim().split('\n').filter(Boolean)) expect(JSON.parse(line)).toMatchObject({ timestamp: expect.any(String), message: expect.any(String) });

    const preview = await keel(['ws', 'preview', id, '8080', '--json']);
    expect(preview.code).toBe(0);
    expect(JSON.parse(preview.out)).toMatchObject({ port: 8080, url: expect.stringMatching(/^http:\/\/[0-9a-f]{40}\.localhost:\d+\/$/) });
    const plain = await keel(['ws', 'preview', id, '8080']);
    expect(plain.out).toMatch(/^http:\/\/[0-9a-f]{40}\.localhost:\d+\/\n$/);
  }, 60_000);

  test('logs -f prints the lines so far, then follows until interrupted', async () => {
    const proc = Bun.spawn(['node', join(project.dir, 'node_modules/.bin/keel'), 'ws', 'logs', id, '-f', '--tail', '20'], { cwd: project.dir, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' });
    const reader = proc.stdout.getReader();
    let seen = '';
    const until = Date.now() + 15_000;
    while (!seen.includes('workspace ready') && Date.now() < until) {
      const { value, done } = await Promise.race([reader.read(), Bun.sleep(15_000).then(() => ({ value: undefined, done: true }))]);
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    expect(seen).toContain('keel: workspace ready');
    await Bun.sleep(300);
    expect(proc.exitCode).toBeNull(); // still following
    proc.kill('SIGINT');
    await proc.exited;
  }, 30_000);

  test('the checkout runs the same commands: bun src/cli.ts ws ...', async () => {
    const r = await checkout(['ws', 'exec', id, '--', 'exit 5']);
    expect(r.code).toBe(5);
    const listed = await checkout(['ws', 'list', '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.out).workspaces.map((w: { id: string }) => w.id)).toContain(id);
    const usage = await checkout(['ws', 'exec', id]);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain('usage: keel ws exec');
  }, 30_000);

  test('shell attaches a terminal to a pseudo-terminal: what is typed runs, exit leaves with 0', async () => {
    // script(1) gives the command a PTY; Bun has a global WebSocket (Node 20 has none).
    const cmd = `${process.execPath} src/cli.ts ws shell ${id}`;
    const r = await run(['script', '-qefc', cmd, '/dev/null'], { cwd: REPO, env, stdin: 'echo shell-$((6*7))\nexit\n', timeoutMs: 20_000 });
    expect(r.out).toContain('shell-42');
    expect(r.code).toBe(0);
  }, 30_000);

  test('delete --json, then the workspace is gone (exit 1 with the API code)', async () => {
    const del = await keel(['ws', 'delete', id, '--json']);
    expect(del.code).toBe(0);
    expect(JSON.parse(del.out)).toMatchObject({ id, deleted: true });
    const gone = await keel(['ws', 'exec', id, '--', 'true']);
    expect(gone.code).toBe(1);
    expect(gone.err).toContain('WORKSPACE_NOT_FOUND');
    expect(gone.out).toBe('');
  }, 30_000);
});

test('a wrong command line exits 2 with the usage; --help exits 0', async () => {
  for (const args of [['ws', 'create'], ['ws', 'nope'], ['ws', 'exec', 'ws_x'], ['ws', 'preview', 'ws_x', 'eighty'], ['ws', 'list', '--bogus']]) {
    const r = await keel(args);
    expect({ args, code: r.code }).toEqual({ args, code: 2 });
    expect(r.err).toStartWith('keel: ');
    expect(r.out).toBe('');
  }
  for (const verb of ['list', 'create', 'exec', 'logs', 'shell', 'cp', 'preview', 'delete']) {
    const r = await keel(['ws', verb, '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toStartWith(`usage: keel ws ${verb}`);
  }
}, 30_000);

test('a bad token exits 1 with the API error; login keeps url and token in a 0600 file used next time', async () => {
  const bad = await keel(['ws', 'list'], { KEEL_TOKEN: 'not-a-token' });
  expect(bad.code).toBe(1);
  expect(bad.err).toContain('UNAUTHORIZED');
  expect(bad.err).not.toContain('not-a-token');

  const refused = await keel(['login', '--url', p.url('workspaces'), '--token', 'not-a-token'], { KEEL_URL: undefined, KEEL_TOKEN: undefined });
  expect(refused.code).toBe(1);
  const file = join(home, 'keel', 'config.json');
  expect(() => statSync(file)).toThrow();

  const bob = p.token('bob');
  const login = await keel(['login', '--url', p.url('workspaces')], { KEEL_URL: undefined, KEEL_TOKEN: undefined }, `${bob}\n`);
  expect(login.code).toBe(0);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: p.url('workspaces'), token: bob });
  const listed = await keel(['ws', 'list', '--json'], { KEEL_URL: '', KEEL_TOKEN: '' });
  expect(listed.code).toBe(0);
  expect(JSON.parse(listed.out)).toEqual({ workspaces: [] }); // bob has none
}, 30_000);
