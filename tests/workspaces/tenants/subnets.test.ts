// The subnet arithmetic behind per-workspace networks: /28 blocks carved from the pool, skipping
// every subnet the engine already uses, starting at a block chosen by the workspace id.
import { describe, expect, test } from 'bun:test';
import { contains, overlaps, parseCidr, subnetCandidates } from '../../../src/services/workspaces/network/subnets';
import { startTestPlatform } from '../../helpers/platform';
import { docker } from '../../helpers/docker';
import { closeAndClean, waitStatus } from '../../helpers/workspaces';

const pool = parseCidr('10.213.0.0/16')!;

describe('subnets', () => {
  test('parses and aligns CIDRs, refuses what is not one', () => {
    expect(parseCidr('10.213.7.9/16')).toEqual({ base: parseCidr('10.213.0.0/16')!.base, prefix: 16 });
    for (const bad of ['10.213.0.0', '10.213.0.0/33', '300.1.1.1/8', 'fd00::/8', '']) expect(parseCidr(bad)).toBeNull();
    expect(contains(pool, '10.213.255.254')).toBe(true);
    expect(contains(pool, '10.214.0.1')).toBe(false);
    expect(overlaps(parseCidr('172.16.0.0/12')!, parseCidr('172.17.0.0/16')!)).toBe(true);
    expect(overlaps(parseCidr('10.213.0.0/28')!, parseCidr('10.213.0.16/28')!)).toBe(false);
  });

  test('candidates are /28s in the pool, gateway first address, none overlapping a used subnet', () => {
    const used = ['172.17.0.0/16', '10.213.0.0/20', '10.213.16.0/28'];
    const list = subnetCandidates(pool, used, 'ws_abc', 200);
    expect(list.length).toBe(200);
    for (const c of list) {
      expect(c.subnet).toMatch(/^10\.213\.\d+\.\d+\/28$/);
      const cidr = parseCidr(c.subnet)!;
      expect(contains(cidr, c.gateway)).toBe(true);
      expect(c.gateway.split('.').at(-1)).toBe(String((Number(c.subnet.split('/')[0]!.split('.').at(-1)) + 1)));
      for (const u of used) expect(overlaps(cidr, parseCidr(u)!)).toBe(false);
    }
    expect(new Set(list.map((c) => c.subnet)).size).toBe(200);
  });

  test('the start block depends on the workspace id, so concurrent Keels rarely race for one', () => {
    const starts = new Set(['ws_a', 'ws_b', 'ws_c', 'ws_d', 'ws_e'].map((id) => subnetCandidates(pool, [], id, 1)[0]!.subnet));
    expect(starts.size).toBeGreaterThan(1);
  });

  test('a full pool yields no candidate', () => {
    const small = parseCidr('10.9.0.0/26')!;
    expect(subnetCandidates(small, [], 'ws_x', 10).length).toBe(4);
    expect(subnetCandidates(small, ['10.9.0.0/26'], 'ws_x', 10)).toEqual([]);
  });
});

describe('through the engine', () => {
  test('a pool with no free /28 left fails the workspace with a reason naming the setting', async () => {
    // Another network (not Keel's) holds the whole pool.
    const blocker = `keel-tn-pool-blocker-${process.pid}`;
    expect(docker('network', 'create', '--subnet', '10.215.0.0/26', blocker).code).toBe(0);
    const p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '26650-26699', APP_WORKSPACE_SUBNET_POOL: '10.215.0.0/26' } });
    try {
      const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'tn-pool-full', template: 'minimal' } });
      expect(res.status).toBe(201);
      const failed = await waitStatus(p, ((await res.json()) as any).id, 'failed');
      expect(failed.reason).toContain('no free /28 left in APP_WORKSPACE_SUBNET_POOL (10.215.0.0/26)');
    } finally {
      await closeAndClean(p);
      docker('network', 'rm', blocker);
    }
  }, 60_000);
});
