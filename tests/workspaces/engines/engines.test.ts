// Workspaces over two Docker engines (APP_ENGINES): the shared test engine (`a`) and a second private
// dockerd in a network namespace of its own (`b`, tests/helpers/second-engine.ts), as an engine on
// another machine. Placement, the template image built on each engine, subnets and firewall rules
// per engine, then `b` stopped (503 ENGINE_UNAVAILABLE for its workspaces, creates go to `a`) and
// started again (its workspace reconciled, then started on `b` once more).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, keelInstance } from '../../helpers/docker';
import { closeAndClean, createRunning, getWorkspace, waitStatus } from '../../helpers/workspaces';
import { dockerB, HOST as HOST_B, NETNS, NETNS_PATH, removeInstanceObjectsB, startSecondEngine, stopSecondEngine } from '../../helpers/second-engine';
import { removeRules } from '../../../src/services/workspaces/network/firewall';
import { loadWorkspacesConfig } from '../../../src/services/workspaces/workspaces.config';
import { contains, parseCidr } from '../../../src/services/workspaces/network/subnets';

const POOL = '10.213.0.0/16';
const minimalImage = loadWorkspacesConfig({}).minimalImage;
let p: TestPlatform;
let instance = '';
let onA: any;
let onB: any;

const engineOf = async (id: string) => (await getWorkspace(p, id, 'admin')).body.engine as string;
const exec = (id: string, command: string) => p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command } });
const subnetOf = (cli: (...a: string[]) => { stdout: string }, id: string) => cli('network', 'inspect', `keel-${id}`, '--format', '{{(index .IPAM.Config 0).Subnet}}').stdout;
const netnsRules = () => Bun.spawnSync(['ip', 'netns', 'exec', NETNS, 'iptables', '-S', 'KEEL-FORWARD'], { stdout: 'pipe' }).stdout.toString();
const hostRules = () => Bun.spawnSync(['iptables', '-S', 'KEEL-FORWARD'], { stdout: 'pipe' }).stdout.toString();

beforeAll(async () => {
  await startSecondEngine();
  // Engine b starts without the template image: Keel must build it there on first use.
  dockerB('rmi', '-f', minimalImage);
  p = await startTestPlatform({
    services: ['workspaces'],
    env: {
      APP_ENGINES: `a=${process.env.DOCKER_HOST},b=${HOST_B}?netns=${NETNS}`,
      APP_ENGINE_CHECK_SECONDS: '1',
      APP_WORKSPACE_SUBNET_POOL: POOL,
    },
  });
  instance = keelInstance(p.dataDir);
}, 120_000);

afterAll(async () => {
  await closeAndClean(p);
  await startSecondEngine().catch(() => {});
  removeInstanceObjectsB(instance);
  await removeRules(instance, undefined, NETNS_PATH);
}, 120_000);

describe('placement over two engines', () => {
  test('the first workspace goes to the engine that has the image, the second to the emptier engine', async () => {
    onA = await createRunning(p, 'eng-one', { timeoutMs: 60_000 });
    expect(await engineOf(onA.id)).toBe('a');
    onB = await createRunning(p, 'eng-two', { timeoutMs: 60_000 });
    expect(await engineOf(onB.id)).toBe('b');
    expect(docker('inspect', onA.containerId).code).toBe(0);
    expect(dockerB('inspect', onB.containerId).code).toBe(0);
    expect(docker('inspect', onB.containerId).code).not.toBe(0);
  }, 150_000);

  test('engine b got the minimal image built on first use', () => {
    expect(dockerB('image', 'inspect', minimalImage).code).toBe(0);
  });

  test('exec and logs reach the workspace on its own engine', async () => {
    for (const ws of [onA, onB]) {
      const res = await exec(ws.id, 'hostname');
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).stdout.trim()).toBe(ws.name);
      const logs = await p.api('workspaces', `/api/workspaces/${ws.id}/logs?tail=20`);
      expect(logs.status).toBe(200);
    }
  }, 60_000);

  test('only an admin is shown the engine', async () => {
    const own = await getWorkspace(p, onB.id);
    expect(own.status).toBe(200);
    expect(own.body.engine).toBeUndefined();
  });

  test("each engine's workspace networks come from its own half of the pool", () => {
    const pool = parseCidr(POOL)!;
    const [a, b] = [subnetOf(docker, onA.id), subnetOf(dockerB, onB.id)];
    const halfOf = (subnet: string) => (contains({ base: pool.base, prefix: 17 }, subnet.split('/')[0]!) ? 'first' : 'second');
    expect(halfOf(a)).toBe('first');
    expect(halfOf(b)).toBe('second');
  });

  test("engine b's workspace is firewalled in b's network namespace, not on the host", () => {
    expect(netnsRules()).toContain(`keel:${instance}:${onB.id}`);
    expect(hostRules()).not.toContain(`keel:${instance}:${onB.id}`);
    expect(hostRules()).toContain(`keel:${instance}:${onA.id}`);
  });
});

describe('an engine down and back', () => {
  test("while engine b is stopped its workspace's operations answer 503 ENGINE_UNAVAILABLE with Retry-After", async () => {
    // Killed, as a crash or a machine cut off: Keel is told nothing, its record still says running.
    await stopSecondEngine('SIGKILL');
    const answers = [
      await exec(onB.id, 'true'),
      await p.api('workspaces', `/api/workspaces/${onB.id}/logs?tail=5`),
      await p.api('workspaces', `/api/workspaces/${onB.id}/start`, { method: 'POST' }),
      await p.api('workspaces', `/api/workspaces/${onB.id}/stop`, { method: 'POST' }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await res.json()) as any).error.code).toBe('ENGINE_UNAVAILABLE');
    }
  }, 90_000);

  test('the workspace on the engine that answers is not held up', async () => {
    const res = await exec(onA.id, 'echo fine');
    expect(res.status).toBe(200);
  });

  test('a create while b is down goes to a', async () => {
    const third = await createRunning(p, 'eng-three', { timeoutMs: 60_000 });
    expect(await engineOf(third.id)).toBe('a');
  }, 90_000);

  test("when b answers again its workspace is reconciled (its container did not survive the engine) and starts on b", async () => {
    expect((await getWorkspace(p, onB.id)).body.status).toBe('running');
    await startSecondEngine(120_000);
    await waitStatus(p, onB.id, 'stopped', { as: 'admin', timeoutMs: 60_000 });
    const start = await p.api('workspaces', `/api/workspaces/${onB.id}/start`, { method: 'POST' });
    expect(start.status).toBe(200);
    await waitStatus(p, onB.id, 'running', { timeoutMs: 60_000 });
    expect(await engineOf(onB.id)).toBe('b');
    const res = await exec(onB.id, 'echo back');
    expect(res.status).toBe(200);
  }, 240_000);
});
