// The exec kill holds whenever it is asked for, even before the command has told Keel its pid
// (CONTRACT.md, "One tenant never stalls another"): timeouts of a few milliseconds and clients that
// leave at once leave no process behind, and the exec slot comes back only once the command is gone.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { waitFor } from '../../helpers/docker';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { closeAndClean, createRunning, streamCounters } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform | undefined;
let ws = '';

const execRaw = (body: unknown, init: RequestInit = {}) => p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', json: body, ...init });

/** What runs in the workspace, seen through an admin's exec (admins take no exec slot). */
async function processes(): Promise<string> {
  const res = await p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', json: { command: 'ps -o pid,args' }, as: 'admin' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { stdout: string }).stdout;
}

/** The exec and stream slots the test's actor holds, as its quotas count them. */
async function slotsInUse(): Promise<{ execs: number; streams: number }> {
  const res = await p!.api('workspaces', '/api/quotas');
  expect(res.status).toBe(200);
  return ((await res.json()) as { used: { execs: number; streams: number } }).used;
}

async function files(dir: string): Promise<string> {
  const res = await p!.api('workspaces', `/api/workspaces/${ws}/exec`, { method: 'POST', json: { command: `ls ${dir}` }, as: 'admin' });
  return ((await res.json()) as { stdout: string }).stdout;
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
  ws = (await createRunning(p!, 'exec-kill', { timeoutMs: 90_000 })).id;
}, 120_000);

afterAll(() => closeAndClean(p), 60_000);

test('timeouts of 1 to 5 ms answer 124 and leave no process of the command behind', async () => {
  const markers: string[] = [];
  for (let i = 0; i < 20; i++) {
    const timeout = (i % 5) + 1;
    const marker = `sleep 7${String(i).padStart(2, '0')}`;
    markers.push(marker);
    const res = await execRaw({ command: `${marker} & ${marker}`, timeout });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ exitCode: 124, timedOut: true });
  }
  // The kill is done before the answer: the very next look finds nothing (2 s is the contract's bound).
  const t0 = Date.now();
  const ps = await processes();
  expect(Date.now() - t0).toBeLessThan(2000);
  for (const m of markers) expect(ps).not.toContain(m);
  expect((await streamCounters(p!)).execs).toBe(0);
}, 60_000);

test('a 1 ms timeout kills a command that started children of its own', async () => {
  // The command starts; the kill waits for its pid and takes its whole process group.
  const res = await execRaw({ command: 'sleep 761 & sleep 762 & wait', timeout: 1 });
  expect(await res.json()).toMatchObject({ exitCode: 124, timedOut: true });
  const ps = await processes();
  expect(ps).not.toContain('sleep 761');
  expect(ps).not.toContain('sleep 762');
});

test('a streaming exec whose client leaves at once leaves no process', async () => {
  // The client leaves once the answer's headers arrive, before any event (the command prints
  // nothing): at once, when the command may still be starting, then later and later, so that some
  // leave after it started however fast the machine runs it. No try may leave its process behind.
  const delaysMs = [0, 0, 0, 1, 2, 4, 8, 16, 64, 256];
  for (const [i, ms] of delaysMs.entries()) {
    const abort = new AbortController();
    const res = await execRaw({ command: `touch /tmp/early-${i}; sleep 78${i}`, stream: true }, { signal: abort.signal });
    expect(res.status).toBe(200);
    if (ms) await Bun.sleep(ms);
    abort.abort();
    // Its exec and stream slots come back once Keel has seen the client leave and the command is
    // gone (a try that left before the command started holds no process, but its slots until then):
    // the tries stay within the actor's quotas.
    await waitFor('the slots to come back', async () => {
      const used = await slotsInUse();
      return used.execs === 0 && used.streams === 0;
    }, 10_000, 10);
  }
  await Bun.sleep(500); // a command the kill missed would be running by now
  const ps = await processes();
  for (const i of delaysMs.keys()) expect(ps).not.toContain(`sleep 78${i}`);
  expect(await files('/tmp')).toContain('early-');
});

test('a JSON exec whose client leaves while the command starts leaves no process', async () => {
  for (let i = 0; i < 5; i++) {
    const abort = new AbortController();
    const pending = execRaw({ command: `touch /tmp/gone-${i}; sleep 79${i}` }, { signal: abort.signal }).catch(() => undefined);
    await Bun.sleep(i * 10);
    abort.abort();
    await pending;
  }
  await waitFor('the execs to end', async () => (await streamCounters(p!)).execs === 0, 10_000);
  await Bun.sleep(500);
  const ps = await processes();
  for (let i = 0; i < 5; i++) expect(ps).not.toContain(`sleep 79${i}`);
});
