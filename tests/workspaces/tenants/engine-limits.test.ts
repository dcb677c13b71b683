// Engine-side limits where a workspace could fill the host: the container log is rotated by the
// engine (json-file max-size / max-file), and a disk limit is asked of the engine's storage quotas,
// which this machine's engine (vfs on a filesystem without project quotas) refuses, visibly.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, statSync } from 'node:fs';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { inspect } from '../../helpers/docker';
import { closeAndClean, createRunning, waitStatus } from '../../helpers/workspaces';
import { loadWorkspacesConfig } from '../../../src/services/workspaces/workspaces.config';

let p: TestPlatform;
let quota: TestPlatform;

beforeAll(async () => {
  [p, quota] = await Promise.all([
    startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '26700-26749', APP_WORKSPACE_LOG_MAX_SIZE: '1m', APP_WORKSPACE_LOG_MAX_FILES: '2' } }),
    startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '26750-26799', APP_WORKSPACE_DISK_LIMIT: '1g' } }),
  ]);
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
  await closeAndClean(quota);
});

describe('container log', () => {
  test('the container carries json-file rotation options, and the engine keeps the log within them', async () => {
    const ws = await createRunning(p, 'tn-limits-log');
    const c = inspect('container', ws.containerId);
    expect(c.HostConfig.LogConfig).toEqual({ Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '2' } });
    // About 3 MB of log lines, written to the container's own output as its processes would.
    const res = await p.api('workspaces', `/api/workspaces/${ws.id}/exec`, {
      method: 'POST',
      json: { command: "head -c 3000000 /dev/zero | tr '\\0' x | fold -w 1000 > /proc/1/fd/1", timeout: 60_000 },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).exitCode).toBe(0);
    const logPath = c.LogPath as string;
    expect(existsSync(`${logPath}.1`)).toBe(true);
    expect(existsSync(`${logPath}.2`)).toBe(false);
    expect(statSync(logPath).size + statSync(`${logPath}.1`).size).toBeLessThan(2.2 * 1024 * 1024);
    // Logs stay readable through the API after the rotation.
    const tail = await p.api('workspaces', `/api/workspaces/${ws.id}/logs?tail=2`);
    expect(((await tail.json()) as any).logs.at(-1).message).toBe('x'.repeat(1000));
  });

  test('the settings are checked at start-up, naming the variable', () => {
    expect(() => loadWorkspacesConfig({ APP_WORKSPACE_LOG_MAX_SIZE: 'lots' })).toThrow('APP_WORKSPACE_LOG_MAX_SIZE');
    expect(() => loadWorkspacesConfig({ APP_WORKSPACE_LOG_MAX_FILES: '0' })).toThrow('APP_WORKSPACE_LOG_MAX_FILES');
    expect(() => loadWorkspacesConfig({ APP_WORKSPACE_DISK_LIMIT: '-1g' })).toThrow('APP_WORKSPACE_DISK_LIMIT');
    expect(() => loadWorkspacesConfig({ APP_WORKSPACE_FIREWALL: 'maybe' })).toThrow('APP_WORKSPACE_FIREWALL');
    expect(() => loadWorkspacesConfig({ APP_WORKSPACE_SUBNET_POOL: '10.0.0.0/30' })).toThrow('APP_WORKSPACE_SUBNET_POOL');
    expect(loadWorkspacesConfig({})).toMatchObject({ logMaxSize: '10m', logMaxFiles: 3, diskLimit: '', firewall: 'required', subnetPool: '10.213.0.0/16' });
  });
});

describe('disk limit', () => {
  test("on an engine without storage quotas, a workspace with APP_WORKSPACE_DISK_LIMIT fails with the engine's reason", async () => {
    const res = await quota.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'tn-limits-disk', template: 'minimal' } });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as any;
    const failed = await waitStatus(quota, id, 'failed');
    expect(failed.reason).toMatch(/^engine: .*quota/);
  });
});
