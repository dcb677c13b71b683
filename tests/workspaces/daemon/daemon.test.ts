// keeld, the daemon in every workspace container, through the real engine and Keel's HTTP API:
// processes start under it; its token is nowhere in the container; no other workspace reaches it
// and a wrong token is refused; a killed daemon is started again while requests keep answering; with
// APP_WORKSPACE_DAEMON=off every process starts through the engine.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { inspect, waitFor } from '../../helpers/docker';
import { closeAndClean, createRunning } from '../../helpers/workspaces';

const PORT = 49983;
let p: TestPlatform;
let off: TestPlatform;
let alice: any;
let bob: any;

async function run(ws: any, command: string, as = 'alice'): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const res = await p.api('workspaces', `/api/workspaces/${ws.id}/exec`, { method: 'POST', as, json: { command, timeout: 30_000 } });
  expect(res.status).toBe(200);
  return (await res.json()) as { exitCode: number; stdout: string; stderr: string };
}

/** The names of a command's ancestors inside the container (busybox awk reads each parent from /proc). */
const ANCESTORS = `p=$$; while [ "$p" -gt 1 ]; do cat /proc/$p/comm; p=$(awk '{print $4}' /proc/$p/stat); done`;

const addressOf = (ws: any) => inspect('container', ws.containerId).NetworkSettings.Networks[`keel-${ws.id}`].IPAddress as string;
const saltOf = (ws: any) => inspect('container', ws.containerId).Config.Labels['dev.keel.daemon'] as string;
/** The token as Keel derives it (engine/keeld.ts): HMAC of the container's salt with the data dir's key. */
function tokenOf(ws: any): string {
  const key = Buffer.from(readFileSync(join(p.dataDir, 'workspaces-code-key'), 'utf8').trim(), 'base64url');
  return createHmac('sha256', key).update(`keeld:${saltOf(ws)}`).digest('base64url');
}

/** One raw request to a keeld: the frames it answered with, as [type, text]. */
function ask(address: string, request: object): Promise<[number, string][]> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: address, port: PORT });
    const chunks: Buffer[] = [];
    s.on('connect', () => s.write(JSON.stringify(request) + '\n'));
    s.on('data', (b: Buffer) => chunks.push(b));
    s.on('error', reject);
    s.on('close', () => {
      const all = Buffer.concat(chunks);
      const frames: [number, string][] = [];
      for (let off = 0; off + 5 <= all.length; ) {
        const n = all.readUInt32BE(off + 1);
        frames.push([all[off]!, all.subarray(off + 5, off + 5 + n).toString()]);
        off += 5 + n;
      }
      resolve(frames);
    });
  });
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'] });
  [alice, bob] = await Promise.all([createRunning(p, 'kd-alice'), createRunning(p, 'kd-bob', { as: 'bob' })]);
}, 120_000);

afterAll(async () => {
  await closeAndClean(p);
  await closeAndClean(off);
});

describe('processes start through keeld', () => {
  test("an exec's command runs under keeld, as the workspace's user", async () => {
    const r = await run(alice, `${ANCESTORS}; id -u`);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')).toContain('keeld');
    expect(r.stdout.trim().split('\n').pop()).toBe('1000');
  });

  test('keeld runs from its read-only volume, and the workspace cannot change it', async () => {
    const r = await run(alice, 'ls -l /.keel/keeld && echo x > /.keel/keeld; echo "exit=$?"');
    expect(r.stdout).toMatch(/^-r-xr-xr-x .* \/\.keel\/keeld/);
    expect(r.stdout).toContain('exit=1');
    const mount = inspect('container', alice.containerId).Mounts.find((m: any) => m.Destination === '/.keel');
    expect(mount?.RW).toBe(false);
  });
});

describe('the token', () => {
  test("is in no process's command line or environment, no file the workspace reads, and not in its log", async () => {
    const token = tokenOf(alice);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Read back whole (a command naming the token would itself show it): every process's command line
    // and environment, and the files where a secret could be left for the workspace to find.
    const r = await run(alice, 'cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null; find /.keel /tmp /run /workspace /home /etc -type f -size -1M -exec cat {} + 2>/dev/null');
    expect(r.stdout).toContain('KEEL_WORKSPACE_ID=');
    expect(r.stdout).toContain('keeld');
    expect(r.stdout).not.toContain(token);
    const logs = await p.api('workspaces', `/api/workspaces/${alice.id}/logs?tail=all`);
    expect(await logs.text()).not.toContain(token);
  });

  test('a wrong token, or another workspace\'s, is refused before anything runs', async () => {
    const target = addressOf(alice);
    for (const token of ['', 'x'.repeat(43), tokenOf(bob)]) {
      const frames = await ask(target, { token, op: 'exec', cmd: ['sh', '-c', 'touch /workspace/pwned'] });
      expect(frames).toEqual([[5, 'unauthorized']]);
    }
    expect((await run(alice, 'ls /workspace/pwned 2>&1; echo "exit=$?"')).stdout).toContain('exit=1');
    // The control: Keel's token is taken.
    expect(await ask(target, { token: tokenOf(alice), op: 'ping' })).toEqual([[4, '0']]);
  });

  test("another workspace cannot connect to a workspace's keeld; the workspace itself can", async () => {
    const target = addressOf(alice);
    const fromBob = await run(bob, `nc -w 3 ${target} ${PORT} </dev/null 2>&1; echo "exit=$?"`, 'bob');
    expect(fromBob.stdout).toMatch(/exit=1/);
    const fromItself = await run(alice, `nc -w 1 127.0.0.1 ${PORT} </dev/null 2>&1; echo "exit=$?"`);
    expect(fromItself.stdout).toContain('exit=0');
  });
});

test("keeld's port is not previewed: 400 naming the field", async () => {
  const res = await p.api('workspaces', `/api/workspaces/${alice.id}/previews`, { method: 'POST', json: { port: PORT } });
  expect(res.status).toBe(400);
  const body = (await res.json()) as any;
  expect(body.error.code).toBe('INVALID_REQUEST');
  expect(body.error.details.property).toBe('/port');
});

describe('recovery', () => {
  test('a killed keeld: the next requests answer, and keeld runs again', async () => {
    const pids = async () => (await run(alice, `for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = keeld ] && basename $d; done`)).stdout.trim().split('\n').filter(Boolean);
    const before = await pids();
    expect(before.length).toBe(1);
    await run(alice, `kill -9 ${before[0]}`);
    // The next exec finds nothing listening: keeld is started again through the engine, and the exec answers.
    const r = await run(alice, 'echo still here');
    expect(r.stdout).toBe('still here\n');
    await waitFor('keeld to run again', async () => (await pids()).some((pid) => pid !== before[0]), 10_000);
    expect((await run(alice, ANCESTORS)).stdout.split('\n')).toContain('keeld');
    // Files and processes go on too.
    const put = await p.api('workspaces', `/api/workspaces/${alice.id}/files?path=/workspace/after.txt`, { method: 'PUT', body: 'after the kill' });
    expect(put.status).toBeLessThan(300);
    expect((await run(alice, 'cat /workspace/after.txt')).stdout).toBe('after the kill');
  });

  test('a start of keeld where one listens already starts nothing and says so (exit 3), which Keel reads as an address it cannot reach', async () => {
    const count = async () => (await run(alice, `for d in /proc/[0-9]*; do cat $d/comm 2>/dev/null; done | grep -c '^keeld$'`)).stdout.trim();
    expect(await count()).toBe('1');
    const r = await run(alice, `/.keel/keeld serve --detach --verifier ${'0'.repeat(64)}; echo "exit $?"`);
    expect(r.stdout).toBe('exit 3\n');
    expect(await count()).toBe('1');
  });
});

describe('APP_WORKSPACE_DAEMON=off', () => {
  test('every process starts through the engine: no keeld in the container', async () => {
    off = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_DAEMON: 'off' } });
    const ws = await createRunning(off, 'kd-off');
    const res = await off.api('workspaces', `/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command: `${ANCESTORS}; ls /.keel 2>&1` } });
    const body = (await res.json()) as { stdout: string };
    expect(body.stdout.split('\n')).not.toContain('keeld');
    expect(body.stdout).toContain('No such file');
  }, 120_000);
});
