// APP_TEMPLATE_BUILDS bounds the builds that run at once: with 1, a second template's build waits
// (its log says so) until the first ended, then runs and ends ready; the first's steps all come before
// the second's. A delete of a template stops its build in flight and frees its slot.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader } from '../../helpers/sse';
import { closeAndClean } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
const post = (path: string, json: unknown) => p.api('workspaces', path, { method: 'POST', json, as: 'alice' });

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_TEMPLATE_BUILDS: '1' } });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
}, 60_000);

/** The build's whole log over SSE, to its done event: lines with their times, and the end. */
async function follow(id: string, buildId: string) {
  const res = await p.api('workspaces', `/api/templates/${id}/builds/${buildId}/logs?follow=true`, { as: 'alice' });
  expect(res.status).toBe(200);
  const frames = await sseReader(res).collect((f) => f.event === 'done', 120_000);
  return {
    lines: frames.filter((f) => !f.event && f.data).map((f) => JSON.parse(f.data!) as { timestamp: string; message: string }),
    done: JSON.parse(frames.at(-1)!.data!) as { status: string; reason?: string },
  };
}

test('with APP_TEMPLATE_BUILDS=1 the second build waits for the first, then ends ready', async () => {
  const stamp = Date.now();
  const made = [];
  for (const n of [1, 2]) {
    const res = await post('/api/templates', { name: `slot-${n}`, dockerfile: `FROM keel/minimal\nRUN echo ${stamp}-${n} > /tmp/n && sleep 1\n` });
    expect(res.status).toBe(202);
    made.push((await res.json()) as { id: string; buildId: string });
  }
  const [first, second] = await Promise.all(made.map((m) => follow(m.id, m.buildId)));
  expect(first!.done).toEqual({ status: 'ready' });
  expect(second!.done).toEqual({ status: 'ready' });
  expect(first!.lines.some((l) => l.message.includes('APP_TEMPLATE_BUILDS'))).toBe(false);
  expect(second!.lines[0]!.message).toMatch(/waiting for one of the 1 builds that run at once to end \(APP_TEMPLATE_BUILDS\)/);
  // The second's first step comes after the first's last line.
  const lastOfFirst = Date.parse(first!.lines.at(-1)!.timestamp);
  const firstStepOfSecond = second!.lines.find((l) => /^Step 1\//.test(l.message))!;
  expect(Date.parse(firstStepOfSecond.timestamp)).toBeGreaterThanOrEqual(lastOfFirst);
}, 180_000);

test('a delete stops the template\'s build in flight: it ends failed at once and its slot goes to the waiting build', async () => {
  const stamp = Date.now();
  const slow = (await (await post('/api/templates', { name: 'slow-deleted', dockerfile: `FROM keel/minimal\nRUN echo ${stamp} && sleep 60\n` })).json()) as { id: string; buildId: string };
  await waitForLine(slow.id, slow.buildId, /RUN echo \d+ && sleep 60/);
  const next = (await (await post('/api/templates', { name: 'after-deleted', dockerfile: `FROM keel/minimal\nRUN echo ${stamp}-next\n` })).json()) as { id: string; buildId: string };
  const t0 = performance.now();
  expect((await p.api('workspaces', `/api/templates/${slow.id}`, { method: 'DELETE', as: 'alice' })).status).toBe(200);
  const [stopped, after] = await Promise.all([follow(slow.id, slow.buildId), follow(next.id, next.buildId)]);
  expect(stopped.done).toEqual({ status: 'failed', reason: 'the template was deleted during its build' });
  expect(after.done).toEqual({ status: 'ready' });
  // Well before the 60 s step would have ended.
  expect(performance.now() - t0).toBeLessThan(30_000);
}, 120_000);

async function waitForLine(id: string, buildId: string, re: RegExp) {
  const res = await p.api('workspaces', `/api/templates/${id}/builds/${buildId}/logs?follow=true`, { as: 'alice' });
  await sseReader(res).collect((f) => !f.event && !!f.data && re.test((JSON.parse(f.data) as { message: string }).message), 60_000);
}
