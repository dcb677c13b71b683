// Command execution through HTTP against a real `minimal` workspace: result fields, exit codes,
// workdir, env, timeout kill of the whole process tree, output caps, binary output, the streaming
// variant, client disconnects, validation, ownership and a stopped workspace.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { docker, keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader } from '../../helpers/sse';
import { closeAndClean, createRunning, errorCode, streamCounters, waitStatus } from '../../helpers/workspaces';
import { dereferencedDocument } from '../../helpers/openapi';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform | undefined;
let ws = '';

const api = (path: string, init?: Parameters<TestPlatform['api']>[2]) => p!.api('workspaces', path, init);

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
  duration: number;
  timedOut: boolean;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

const execRaw = (body: unknown, as = 'alice', id = ws, init: RequestInit = {}) => api(`/api/workspaces/${id}/exec`, { method: 'POST', json: body, as, ...init });

async function exec(body: Record<string, unknown>): Promise<Result> {
  const res = await execRaw(body);
  expect(res.status).toBe(200);
  return (await res.json()) as Result;
}

/** Command lines of the processes in the workspace. */
async function processes(): Promise<string> {
  return (await exec({ command: 'ps -o pid,args' })).stdout;
}

const execs = async () => (await streamCounters(p!)).execs;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
  ws = (await createRunning(p!, 'exec-main', { timeoutMs: 90_000 })).id;
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

describe('results', () => {
  test('a command answers exitCode, stdout, stderr, duration in ms and the flags', async () => {
    const t0 = Date.now();
    const r = await exec({ command: 'echo hello; echo oops >&2' });
    expect(r).toEqual({
      exitCode: 0,
      stdout: 'hello\n',
      stderr: 'oops\n',
      duration: expect.any(Number),
      timedOut: false,
      stdoutTruncated: false,
      stderrTruncated: false,
    });
    expect(r.duration).toBeGreaterThanOrEqual(0);
    expect(r.duration).toBeLessThanOrEqual(Date.now() - t0 + 5);
  });

  test('the exit code of the command is returned', async () => {
    expect((await exec({ command: 'exit 7' })).exitCode).toBe(7);
    expect((await exec({ command: 'false' })).exitCode).toBe(1);
    expect((await exec({ command: 'no-such-program-here' })).exitCode).toBe(127);
  });

  test("the workdir defaults to the template's and can be chosen", async () => {
    expect((await exec({ command: 'pwd' })).stdout).toBe('/workspace\n');
    expect((await exec({ command: 'pwd', workdir: '/tmp' })).stdout).toBe('/tmp\n');
  });

  test('a workdir that does not exist is 400 INVALID_REQUEST', async () => {
    const res = await execRaw({ command: 'pwd', workdir: '/no/such/dir' });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe('INVALID_REQUEST');
  });

  test('env adds variables to the command', async () => {
    const r = await exec({ command: 'printf "%s|%s" "$GREETING" "$EMPTY"', env: { GREETING: "hello 'world' $HOME", EMPTY: '' } });
    expect(r.stdout).toBe("hello 'world' $HOME|");
  });

  test('the command runs as the template user, not root', async () => {
    expect((await exec({ command: 'id -u' })).stdout).toBe('1000\n');
  });
});

describe('OpenAPI', () => {
  test('the exec result and exit event describe exitCode as a number, not string | number', async () => {
    const doc = await dereferencedDocument(p!.url('workspaces'));
    const result = doc.paths['/api/workspaces/{id}/exec'].post.responses['200'].content['application/json'].schema;
    expect(result.properties.exitCode).toMatchObject({ type: 'number', multipleOf: 1 });
    expect(result.properties.exitCode.anyOf).toBeUndefined();
    const counters = doc.paths['/api/system/streams'].get.responses['200'].content['application/json'].schema;
    for (const k of ['engineStreams', 'followers', 'execs']) expect(counters.properties[k].type).toBe('number');
  });
});

describe('timeout', () => {
  test('past the timeout the process tree is killed and the answer comes at once with 124', async () => {
    const t0 = Date.now();
    // 2 s leaves a loaded 2-core machine time to reach the first echo before the kill.
    const r = await exec({ command: 'echo started; sleep 31 & sleep 32; echo never', timeout: 2000 });
    const elapsed = Date.now() - t0;
    expect(r.exitCode).toBe(124);
    expect(r.timedOut).toBe(true);
    expect(r.stdout).toBe('started\n');
    expect(r.duration).toBeGreaterThanOrEqual(2000);
    expect(elapsed).toBeLessThan(6000);
    // Both the foreground and the background sleep are gone.
    const ps = await processes();
    expect(ps).not.toContain('sleep 31');
    expect(ps).not.toContain('sleep 32');
    expect(await execs()).toBe(0);
  });

  test('a timeout beyond the maximum or below 1 ms is 400', async () => {
    for (const timeout of [600_001, 0, -5, 1.5, 'soon']) {
      const res = await execRaw({ command: 'true', timeout });
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe('INVALID_REQUEST');
    }
  });
});

describe('output', () => {
  test('stdout and stderr are capped at 1 MiB each and flagged as truncated', async () => {
    const r = await exec({ command: "head -c 1100000 /dev/zero | tr '\\0' a; head -c 1048577 /dev/zero | tr '\\0' b >&2" });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.length).toBe(1024 * 1024);
    expect(r.stdoutTruncated).toBe(true);
    expect(r.stderr.length).toBe(1024 * 1024);
    expect(r.stderrTruncated).toBe(true);
    const small = await exec({ command: "head -c 1048576 /dev/zero | tr '\\0' a" });
    expect(small.stdoutTruncated).toBe(false);
  });

  test('binary output keeps the JSON valid: invalid UTF-8 becomes U+FFFD', async () => {
    const res = await execRaw({ command: "printf 'a\\377b\\000c\\342\\202\\254'" });
    expect(res.status).toBe(200);
    const r = JSON.parse(await res.text()) as Result;
    expect(r.stdout).toBe('a\uFFFDb\u0000c€');
  });
});

describe('streaming', () => {
  test('stream: true sends stdout and stderr events, then one exit event', async () => {
    const res = await execRaw({ command: 'echo one; echo two >&2; sleep 0.2; echo three; exit 3', stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = await sseReader(res).collect((f) => f.event === 'exit' || f.event === 'error');
    const text = (kind: string) =>
      frames
        .filter((f) => f.event === kind)
        .map((f) => (JSON.parse(f.data!) as { data: string }).data)
        .join('');
    expect(text('stdout')).toBe('one\nthree\n');
    expect(text('stderr')).toBe('two\n');
    const exit = JSON.parse(frames.at(-1)!.data!) as { exitCode: number; timedOut: boolean; duration: number };
    expect(frames.at(-1)!.event).toBe('exit');
    expect(exit).toEqual({ exitCode: 3, timedOut: false, duration: expect.any(Number) });
  });

  test('a streaming command past its timeout ends with exit 124', async () => {
    const res = await execRaw({ command: 'sleep 33', stream: true, timeout: 500 });
    const frames = await sseReader(res).collect((f) => f.event === 'exit');
    expect(JSON.parse(frames.at(-1)!.data!)).toMatchObject({ exitCode: 124, timedOut: true });
    expect(await processes()).not.toContain('sleep 33');
  });

  test('a streaming client that stops reading holds the command back, and nothing is lost when it reads again', async () => {
    // More than every buffer on the way can hold: loopback TCP autotuning alone may grow a
    // receive buffer to net.ipv4.tcp_rmem's maximum (32 MiB here).
    const size = 80_000_000;
    const res = await execRaw({ command: `head -c ${size} /dev/zero | tr '\\0' x; echo; echo end-of-output`, stream: true, timeout: 120_000 });
    const reader = sseReader(res);
    let received = (JSON.parse((await reader.nextEvent())!.data!) as { data: string }).data.length;
    // The client reads nothing now: far more than every buffer on the way holds is still unwritten,
    // so the writer is still there well after it would have finished unhindered.
    try {
      for (let i = 0; i < 3; i++) {
        await Bun.sleep(500);
        expect(await processes()).toContain(`head -c ${size}`);
      }
    } catch (e) {
      await reader.cancel();
      throw e;
    }
    const frames = await reader.collect((f) => f.event === 'exit' || f.event === 'error', 60_000);
    for (const f of frames.filter((f) => f.event === 'stdout')) received += (JSON.parse(f.data!) as { data: string }).data.length;
    expect(frames.at(-1)!.event).toBe('exit');
    expect(received).toBe(size + 1 + 'end-of-output\n'.length);
    expect(await execs()).toBe(0);
  }, 90_000);

  test('a streaming client that disconnects kills the command', async () => {
    const abort = new AbortController();
    const res = await execRaw({ command: 'echo started; sleep 34', stream: true }, 'alice', ws, { signal: abort.signal });
    const reader = sseReader(res);
    expect((await reader.nextEvent())!.event).toBe('stdout');
    expect(await processes()).toContain('sleep 34');
    abort.abort();
    await waitFor('command killed', async () => !(await processes()).includes('sleep 34'), 5000);
    await waitFor('exec released', async () => (await execs()) === 0, 5000);
  });

  test('a JSON client that disconnects kills the command too', async () => {
    const abort = new AbortController();
    const pending = execRaw({ command: 'sleep 35' }, 'alice', ws, { signal: abort.signal }).catch(() => undefined);
    await waitFor('command started', async () => (await processes()).includes('sleep 35'), 5000);
    abort.abort();
    await pending;
    await waitFor('command killed', async () => !(await processes()).includes('sleep 35'), 5000);
  });
});

describe('errors', () => {
  test('a missing or empty command is 400 INVALID_REQUEST', async () => {
    for (const body of [{}, { command: '' }, { command: 42 }, { workdir: '/tmp' }]) {
      const res = await execRaw(body);
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe('INVALID_REQUEST');
    }
  });

  test('bad env names or values and relative workdirs are 400', async () => {
    for (const body of [
      { command: 'true', env: { '1BAD': 'x' } },
      { command: 'true', env: { 'A-B': 'x' } },
      { command: 'true', env: { GOOD: 5 } },
      { command: 'true', workdir: 'relative/dir' },
    ]) {
      const res = await execRaw(body);
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe('INVALID_REQUEST');
    }
  });

  test('an unknown workspace is 404 WORKSPACE_NOT_FOUND', async () => {
    const res = await execRaw({ command: 'true' }, 'alice', 'ws_unknown');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('WORKSPACE_NOT_FOUND');
  });

  test("another actor gets 404 on alice's workspace; an admin may run commands", async () => {
    const res = await execRaw({ command: 'touch /tmp/bob-was-here' }, 'bob');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('WORKSPACE_NOT_FOUND');
    expect((await exec({ command: 'test -e /tmp/bob-was-here' })).exitCode).toBe(1);
    const admin = await execRaw({ command: 'true' }, 'admin');
    expect(admin.status).toBe(200);
  });

  test('a stopped workspace answers 409 WORKSPACE_NOT_RUNNING', async () => {
    const stop = await api(`/api/workspaces/${ws}/stop?force=true`, { method: 'POST' });
    expect(stop.status).toBe(200);
    await waitStatus(p!, ws, 'stopped');
    for (const stream of [false, true]) {
      const res = await execRaw({ command: 'true', stream });
      expect(res.status).toBe(409);
      expect(await errorCode(res)).toBe('WORKSPACE_NOT_RUNNING');
    }
  }, 60_000);
});

describe('shutdown', () => {
  // Last: it shuts this file's Keel down (the workspace outlives it, so the test can look inside).
  test('shutting Keel down ends a streaming exec with SHUTTING_DOWN and kills the command', async () => {
    const start = await api(`/api/workspaces/${ws}/start`, { method: 'POST' });
    expect(start.status).toBe(200);
    const { containerId } = await waitStatus(p!, ws, 'running');
    const reader = sseReader(await execRaw({ command: 'echo started; sleep 37', stream: true }));
    expect((await reader.nextEvent())!.event).toBe('stdout');
    const platform = p!;
    p = undefined;
    const instance = keelInstance(platform.dataDir);
    try {
      const closing = platform.close();
      const frames = await reader.collect(() => false);
      expect(frames.at(-1)!.event).toBe('error');
      expect((JSON.parse(frames.at(-1)!.data!) as { error: { code: string } }).error.code).toBe('SHUTTING_DOWN');
      expect(await reader.next()).toBeNull();
      await closing;
      const ps = () => docker('exec', containerId, 'ps', '-o', 'args').stdout;
      await waitFor('command killed', () => !ps().includes('sleep 37'), 10_000);
    } finally {
      await removeInstanceObjects(instance);
    }
  }, 60_000);
});
