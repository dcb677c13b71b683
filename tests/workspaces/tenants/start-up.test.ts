// What Keel does about isolation when it starts: it removes the networks and firewall rules of this
// instance that no workspace owns (never another instance's), puts back the rules of its workspaces
// (lost with a host reboot or a flush), and when it cannot manage iptables it says so in one line and
// refuses to create workspaces (APP_WORKSPACE_FIREWALL=required), or runs without its rules when told
// to (off).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { dirname, join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { removeRules } from '../../../src/services/workspaces/network/firewall';
import { startTestPlatform, TEST_SECRET, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, keelInstance, removeInstanceObjects, waitFor } from '../../helpers/docker';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';
import { createRunning } from '../../helpers/workspaces';

const INSTANCE = `keel_tn_startup_${process.pid}`;
const OTHER = `keel_tn_other_${process.pid}`;
const dataDir = mkdtempSync(join(tmpdir(), 'keel-tn-startup-'));
writeFileSync(join(dataDir, 'workspaces-instance'), INSTANCE + '\n');
const env = { APP_WORKSPACE_PORT_RANGE: '26950-26979' };

const iptables = (...args: string[]) => Bun.spawnSync(['iptables', '-w', '10', ...args], { stdout: 'pipe', stderr: 'pipe' });
const rulesTagged = (instance: string, workspaceId: string) =>
  ['KEEL-INPUT', 'KEEL-FORWARD'].flatMap((c) => iptables('-S', c).stdout.toString().split('\n')).filter((l) => l.includes(`"keel:${instance}:${workspaceId}"`));
const labels = (instance: string, workspaceId: string) => ['--label', 'dev.keel.managed=true', '--label', `dev.keel.instance=${instance}`, '--label', `dev.keel.workspace=${workspaceId}`];

let first: TestPlatform | undefined;
let second: TestPlatform | undefined;
let kept: any;
const gone = `ws_tn_gone_${process.pid}`;
const other = `ws_tn_other_${process.pid}`;

beforeAll(async () => {
  // A workspace that stays, made by a first run of this Keel.
  first = await startTestPlatform({ services: ['workspaces'], dataDir, env });
  kept = await createRunning(first, 'tn-startup-kept');
  await first.close();
  first = undefined;
  expect(rulesTagged(INSTANCE, kept.id).length).toBeGreaterThanOrEqual(6);

  // While Keel is down: what a delete cut short by a crash leaves (a network and rules of no
  // workspace), the same for another Keel sharing the engine, and a host reboot's loss of the kept
  // workspace's rules.
  expect(docker('network', 'create', ...labels(INSTANCE, gone), `keel-${gone}`).code).toBe(0);
  expect(docker('network', 'create', ...labels(OTHER, other), `keel-${other}`).code).toBe(0);
  for (const [instance, id] of [[INSTANCE, gone], [OTHER, other]]) {
    expect(iptables('-A', 'KEEL-INPUT', '-i', 'br-tn-nowhere', '-m', 'comment', '--comment', `keel:${instance}:${id}`, '-j', 'REJECT').exitCode).toBe(0);
    expect(iptables('-A', 'KEEL-FORWARD', '-i', 'br-tn-nowhere', '-d', '169.254.0.0/16', '-m', 'comment', '--comment', `keel:${instance}:${id}`, '-j', 'REJECT').exitCode).toBe(0);
  }
  await removeRules(INSTANCE, kept.id);
  expect(rulesTagged(INSTANCE, kept.id)).toEqual([]);

  second = await startTestPlatform({ services: ['workspaces'], dataDir, env });
}, 120_000);

afterAll(async () => {
  await first?.close();
  await second?.close();
  await removeInstanceObjects(INSTANCE);
  await removeInstanceObjects(OTHER);
  docker('network', 'rm', `keel-${gone}`, `keel-${other}`);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('start-up clean-up', () => {
  test("this instance's network and rules that no workspace owns are removed", () => {
    expect(docker('network', 'inspect', `keel-${gone}`).code).not.toBe(0);
    expect(rulesTagged(INSTANCE, gone)).toEqual([]);
  });

  test("another instance's network and rules are left alone", () => {
    expect(docker('network', 'inspect', `keel-${other}`).code).toBe(0);
    expect(rulesTagged(OTHER, other).length).toBe(2);
  });

  test("the kept workspace's rules are back, and it still runs on its own network", async () => {
    expect(rulesTagged(INSTANCE, kept.id).length).toBeGreaterThanOrEqual(6);
    const w = (await (await second!.api('workspaces', `/api/workspaces/${kept.id}`)).json()) as any;
    expect(w.status).toBe('running');
    expect(docker('network', 'inspect', `keel-${kept.id}`).code).toBe(0);
  });
});

describe('when Keel cannot manage iptables', () => {
  // A Keel whose PATH has no iptables: as good as one that may not run it.
  const pathWithoutIptables = dirname(BUN);
  const token = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 600 });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const procs: { keel: KeelProcess; dataDir: string }[] = [];

  async function keelWith(extra: Record<string, string>): Promise<KeelProcess> {
    const dir = mkdtempSync(join(tmpdir(), 'keel-tn-nofw-'));
    const keel = await startKeel([BUN, 'src/main.ts'], { APP_DATA_DIR: dir, PATH: pathWithoutIptables, APP_WORKSPACE_PORT_RANGE: '26980-26999', ...extra }, ['workspaces']);
    procs.push({ keel, dataDir: dir });
    return keel;
  }

  afterAll(async () => {
    for (const { keel, dataDir: dir } of procs) {
      await keel.stop();
      await removeInstanceObjects(keelInstance(dir));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('APP_WORKSPACE_FIREWALL=required (the default): one line at start-up, and creation answers 503 ISOLATION_UNAVAILABLE storing nothing', async () => {
    const keel = await keelWith({});
    const lines = keel.stderr().split('\n').filter((l) => l.includes('workspace network isolation'));
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain('iptables is not installed or not on PATH');
    expect(lines[0]).toContain('creating workspaces is refused');
    const res = await fetch(`${keel.urls.workspaces}/api/workspaces`, { method: 'POST', headers, body: JSON.stringify({ name: 'tn-nofw', template: 'minimal' }) });
    expect(res.status).toBe(503);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe('ISOLATION_UNAVAILABLE');
    expect(body.error.message).toContain('iptables is not installed');
    const list = (await (await fetch(`${keel.urls.workspaces}/api/workspaces`, { headers })).json()) as any;
    expect(list.workspaces).toEqual([]);
  });

  test('APP_WORKSPACE_FIREWALL=off: one line at start-up, and workspaces run on their own networks without Keel rules', async () => {
    const keel = await keelWith({ APP_WORKSPACE_FIREWALL: 'off' });
    const lines = keel.stderr().split('\n').filter((l) => l.includes('workspace network isolation'));
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain('APP_WORKSPACE_FIREWALL=off');
    const res = await fetch(`${keel.urls.workspaces}/api/workspaces`, { method: 'POST', headers, body: JSON.stringify({ name: 'tn-fw-off', template: 'minimal' }) });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as any;
    const w = await waitFor('the workspace to run', async () => {
      const v = (await (await fetch(`${keel.urls.workspaces}/api/workspaces/${id}`, { headers })).json()) as any;
      return v.status === 'running' ? v : null;
    }, 30_000);
    expect(Object.keys(inspect('container', w.containerId).NetworkSettings.Networks)).toEqual([`keel-${id}`]);
    expect(['KEEL-INPUT', 'KEEL-FORWARD'].flatMap((c) => iptables('-S', c).stdout.toString().split('\n')).filter((l) => l.includes(`:${id}"`))).toEqual([]);
  });
});
