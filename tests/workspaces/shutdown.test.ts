// Graceful shutdown of a real Keel process with real work in flight: SIGTERM lets a running exec
// finish with its answer, ends an open log follow, exits 0, and leaves the workspace running.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../src/platform/auth/workspace-token';
import { inspect, keelInstance, removeInstanceObjects, waitFor } from '../helpers/docker';
import { requireTestEnv, TEST_SECRET } from '../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../helpers/process';
import { sseReader } from '../helpers/sse';

requireTestEnv('DOCKER_HOST');
const dataDir = mkdtempSync(join(tmpdir(), 'keel-shutdown-'));
const auth = { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 600 })}`, 'content-type': 'application/json' };
let keel: KeelProcess;
let id = '';
let containerId = '';

beforeAll(async () => {
  keel = await startKeel([BUN, 'src/main.ts'], { APP_DATA_DIR: dataDir }, ['workspaces']);
  const res = await fetch(keel.urls.workspaces + '/api/workspaces', { method: 'POST', headers: auth, body: JSON.stringify({ name: 'shutdown-demo', template: 'minimal' }) });
  expect(res.status).toBe(201);
  id = (await res.json()).id;
  const ws = await waitFor('running', async () => {
    const w = await (await fetch(`${keel.urls.workspaces}/api/workspaces/${id}`, { headers: auth })).json();
    return w.status === 'running' ? w : null;
  }, 60_000);
  containerId = ws.containerId;
}, 90_000);

afterAll(async () => {
  await removeInstanceObjects(keelInstance(dataDir));
  rmSync(dataDir, { recursive: true, force: true });
});

test('SIGTERM finishes an exec in flight, ends a log follow, exits 0 and leaves the workspace running', async () => {
  const base = `${keel.urls.workspaces}/api/workspaces/${id}`;
  const follow = await fetch(`${base}/logs?follow=true&tail=1`, { headers: auth });
  expect(follow.status).toBe(200);
  const stream = sseReader(follow);
  expect(await stream.nextEvent(10_000)).not.toBeNull(); // the tail line: the follow is attached

  const exec = fetch(`${base}/exec`, { method: 'POST', headers: auth, body: JSON.stringify({ command: 'sleep 1; echo finished', timeout: 10_000 }) });
  await Bun.sleep(300); // the exec is running inside the container now
  const exited = keel.stop();

  const answer = await exec;
  expect(answer.status).toBe(200);
  expect(await answer.json()).toMatchObject({ exitCode: 0, stdout: 'finished\n', timedOut: false });
  // The follow gets its final event, then the stream ends.
  const rest = await stream.collect(() => false, 10_000);
  expect(rest.at(-1)).toMatchObject({ event: 'end', data: JSON.stringify({ reason: 'shutdown' }) });
  expect(await exited).toBe(0);
  // Workspaces outlive Keel: they are reconciled when it comes back.
  expect(inspect('container', containerId)?.State?.Running).toBe(true);
});
