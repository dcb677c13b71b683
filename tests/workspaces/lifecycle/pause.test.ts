// Pause and resume through HTTP against a real engine: a counter process in the workspace is frozen
// while paused (docker inspect says Paused) and goes on from where it was after resume; the moves
// are checked (409), owned (404), sent as events, counted as running, and a pause made behind Keel's
// back is followed like any other state.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, inspect, waitFor } from '../../helpers/docker';
import { sseReader, type SseReader } from '../../helpers/sse';
import { closeAndClean, createRunning, errorCode, getWorkspace, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let ws: any;
let stream: SseReader;

const post = (id: string, action: string, as = 'alice') => p.api('workspaces', `/api/workspaces/${id}/${action}`, { method: 'POST', as });
const exec = (id: string, command: string) => p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command } });
async function count(id: string): Promise<number> {
  const res = await exec(id, 'cat /tmp/count');
  expect(res.status).toBe(200);
  return Number(((await res.json()) as { stdout: string }).stdout.trim());
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_QUOTA_RUNNING: '1' } });
  const res = await p.api('workspaces', '/api/events');
  stream = sseReader(res);
  ws = await createRunning(p, 'pausable', { timeoutMs: 90_000 });
  // A counter that ticks every 100 ms, detached from the exec that starts it.
  const started = await exec(ws.id, "setsid sh -c 'i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.1; done' </dev/null >/dev/null 2>&1 &");
  expect(started.status).toBe(200);
  await waitFor('the counter to tick', async () => (await count(ws.id).catch(() => 0)) > 3, 20_000);
}, 120_000);

afterAll(async () => {
  await stream?.cancel();
  await closeAndClean(p);
});

describe('pause and resume', () => {
  test('pause freezes the counter process and resume continues it from where it was', async () => {
    const before = await count(ws.id);
    const paused = await post(ws.id, 'pause');
    expect(paused.status).toBe(200);
    expect(await paused.json()).toEqual({ id: ws.id, status: 'paused' });
    expect(inspect('container', ws.containerId).State.Paused).toBe(true);
    expect((await getWorkspace(p, ws.id)).body.status).toBe('paused');

    // 2 s frozen: a running counter would have ticked about 20 times.
    await Bun.sleep(2_000);
    const resumed = await post(ws.id, 'resume');
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toEqual({ id: ws.id, status: 'running' });
    expect(inspect('container', ws.containerId).State.Paused).toBe(false);
    const after = await count(ws.id);
    expect(after).toBeGreaterThanOrEqual(before);
    expect(after - before).toBeLessThan(12);
    // The same process goes on (memory kept): it counts up from there, not from zero.
    await waitFor('the counter to go on', async () => (await count(ws.id)) > after + 3, 20_000);
  });

  test('the moves are sent as workspace.paused and workspace.resumed events', async () => {
    const frames = await stream.collect((f) => f.event === 'workspace' && JSON.parse(f.data!).event === 'workspace.resumed', 30_000);
    const events = frames.filter((f) => f.event === 'workspace').map((f) => JSON.parse(f.data!)).filter((e) => e.workspace.id === ws.id).map((e) => e.event);
    expect(events.slice(-2)).toEqual(['workspace.paused', 'workspace.resumed']);
  });

  test('exec answers 409 WORKSPACE_NOT_RUNNING while paused, and a second pause or a resume of a running one 409 INVALID_TRANSITION', async () => {
    expect((await post(ws.id, 'resume')).status).toBe(409);
    expect((await post(ws.id, 'pause')).status).toBe(200);
    const again = await post(ws.id, 'pause');
    expect(again.status).toBe(409);
    expect(await errorCode(again)).toBe('INVALID_TRANSITION');
    const denied = await exec(ws.id, 'true');
    expect(denied.status).toBe(409);
    expect(await errorCode(denied)).toBe('WORKSPACE_NOT_RUNNING');
    expect((await post(ws.id, 'resume')).status).toBe(200);
  });

  test("another actor's pause and resume answer 404, and the workspace is untouched", async () => {
    const res = await post(ws.id, 'pause', 'mallory');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('WORKSPACE_NOT_FOUND');
    expect((await post(ws.id, 'resume', 'mallory')).status).toBe(404);
    expect(inspect('container', ws.containerId).State.Paused).toBe(false);
  });

  test('a paused workspace still holds its running place (APP_QUOTA_RUNNING=1)', async () => {
    expect((await post(ws.id, 'pause')).status).toBe(200);
    const quotas = (await (await p.api('workspaces', '/api/quotas')).json()) as any;
    expect(quotas.used.running).toBe(1);
    const second = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'second', template: 'minimal' } });
    expect(second.status).toBe(429);
    expect((await post(ws.id, 'resume')).status).toBe(200);
  });

  test('a pause or unpause made behind Keel\'s back is followed', async () => {
    docker('pause', ws.containerId);
    await waitStatus(p, ws.id, 'paused');
    docker('unpause', ws.containerId);
    await waitStatus(p, ws.id, 'running');
  });

  test('a paused workspace stops (the frozen processes get their SIGTERM) and starts again', async () => {
    expect((await post(ws.id, 'pause')).status).toBe(200);
    const stop = await post(ws.id, 'stop');
    expect(stop.status).toBe(200);
    await waitStatus(p, ws.id, 'stopped', { timeoutMs: 60_000 });
    expect(inspect('container', ws.containerId).State.Running).toBe(false);
    expect((await post(ws.id, 'start')).status).toBe(200);
    await waitStatus(p, ws.id, 'running', { timeoutMs: 60_000 });
  });

  test('a paused workspace is deleted with its container', async () => {
    expect((await post(ws.id, 'pause')).status).toBe(200);
    const del = await p.api('workspaces', `/api/workspaces/${ws.id}?volumes=true`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(inspect('container', ws.containerId)).toBeNull();
  });
});
