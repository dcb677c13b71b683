// Idle stop through HTTP against a real engine: a workspace nobody uses is stopped after its
// autoStopMinutes (fractions allowed, so the test waits seconds) with stopReason "idle" and the usual
// workspace.stopped; API activity on it (exec here) keeps it running; the default comes from
// APP_AUTO_STOP_MINUTES, 0 means never, and a bad value is a 400.
// The list (GET /api/workspaces) is what the test polls: it is not activity on one workspace, while
// GET /api/workspaces/{id} is.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { inspect, waitFor } from '../../helpers/docker';
import { sseReader, type SseReader } from '../../helpers/sse';
import { closeAndClean, createRunning, errorCode } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let stream: SseReader;

/** The workspace as the list shows it (reading the list is not activity on it). */
async function listed(id: string): Promise<any> {
  const res = await p.api('workspaces', '/api/workspaces');
  return ((await res.json()) as { workspaces: any[] }).workspaces.find((w) => w.id === id);
}
const exec = (id: string) => p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command: 'true' } });

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_AUTO_STOP_MINUTES: '0' } });
  stream = sseReader(await p.api('workspaces', '/api/events'));
}, 60_000);

afterAll(async () => {
  await stream?.cancel();
  await closeAndClean(p);
});

describe('idle stop', () => {
  test('a workspace left unused for its autoStopMinutes is stopped with stopReason "idle" and workspace.stopped', async () => {
    const ws = await createRunning(p, 'forgotten', { body: { autoStopMinutes: 0.05 }, timeoutMs: 90_000 });
    expect(ws.autoStopMinutes).toBe(0.05);
    // One last use, timed from before it is sent (Keel records it when the call arrives, later).
    const lastUse = Date.now();
    expect((await exec(ws.id)).status).toBe(200);
    const stopped = await waitFor('the idle workspace to stop', async () => {
      const w = await listed(ws.id);
      return w?.status === 'stopped' ? w : null;
    }, 60_000, 250);
    // Never before its time (a lower bound only: how much later depends on the machine's load).
    expect(Date.now() - lastUse).toBeGreaterThanOrEqual(2_500);
    expect(stopped.stopReason).toBe('idle');
    expect(inspect('container', ws.containerId).State.Running).toBe(false);
    const frames = await stream.collect((f) => f.event === 'workspace' && JSON.parse(f.data!).event === 'workspace.stopped', 30_000);
    expect(frames.map((f) => (f.data ? JSON.parse(f.data) : {})).filter((e) => e.workspace?.id === ws.id).map((e) => e.event)).toContain('workspace.stopped');

    // Started again, it runs without a stopReason (and its countdown starts over).
    expect((await p.api('workspaces', `/api/workspaces/${ws.id}/start`, { method: 'POST' })).status).toBe(200);
    const again = await waitFor('running again', async () => {
      const w = await listed(ws.id);
      return w?.status === 'running' ? w : null;
    }, 60_000, 100);
    expect(again.stopReason).toBeUndefined();
  }, 150_000);

  test('activity on the workspace (exec every second) keeps it running past its autoStopMinutes, and it stops once that ends', async () => {
    // 6 s without activity; the exec loop runs 15 s.
    const ws = await createRunning(p, 'busy', { body: { autoStopMinutes: 0.1 }, timeoutMs: 90_000 });
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      expect((await exec(ws.id)).status).toBe(200);
      expect((await listed(ws.id)).status).toBe('running');
      await Bun.sleep(1_000);
    }
    expect((await listed(ws.id)).status).toBe('running');
    const stopped = await waitFor('the now idle workspace to stop', async () => {
      const w = await listed(ws.id);
      return w?.status === 'stopped' ? w : null;
    }, 60_000, 250);
    expect(stopped.stopReason).toBe('idle');
  }, 150_000);

  test('autoStopMinutes 0 (here the APP_AUTO_STOP_MINUTES default) never stops it', async () => {
    const ws = await createRunning(p, 'forever', { timeoutMs: 90_000 });
    expect(ws.autoStopMinutes).toBe(0);
    await Bun.sleep(4_000);
    expect((await listed(ws.id)).status).toBe('running');
  }, 120_000);

  test('a negative or non-numeric autoStopMinutes is a 400 INVALID_REQUEST and nothing is created', async () => {
    for (const autoStopMinutes of [-1, 'soon']) {
      const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'bad-idle', template: 'minimal', autoStopMinutes } });
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe('INVALID_REQUEST');
      expect(JSON.stringify(await (await p.api('workspaces', '/api/workspaces')).json())).not.toContain('bad-idle');
    }
  });
});

describe('the default', () => {
  test('without APP_AUTO_STOP_MINUTES a create gets autoStopMinutes 60', async () => {
    const q = await startTestPlatform({ services: ['workspaces'] });
    try {
      const res = await q.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'defaulted', template: 'minimal' } });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      const view = (await (await q.api('workspaces', `/api/workspaces/${id}`)).json()) as any;
      expect(view.autoStopMinutes).toBe(60);
    } finally {
      await closeAndClean(q);
    }
  }, 120_000);
});
