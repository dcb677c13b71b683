// A turn cut short by Keel itself: killed outright (a crash) or stopped with SIGTERM. Either way the
// turn ends visibly: after the restart the log ends with a `done` whose finishReason is `interrupted`,
// what was said before the stop is kept, and the session takes messages again. A turn that waits for
// approval is not cut: it still waits after the restart and goes on once decided.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../../src/platform/auth/workspace-token';
import { keelInstance, removeInstanceObjects } from '../../helpers/docker';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../../helpers/fake-openai';
import { requireTestEnv, sharedDatabase, TEST_SECRET } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';
import { sseReader } from '../../helpers/sse';
import { deltas, parse, readAll } from './agent-helpers';

requireTestEnv('DOCKER_HOST');
const dataDir = mkdtempSync(join(tmpdir(), 'keel-agent-restart-'));
const headers = { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 600 })}`, 'content-type': 'application/json' };
let fake: FakeOpenAI;
let keel: KeelProcess | undefined;
let workspaceId = '';
// On the PostgreSQL pass the sessions, events and approvals are kept there, across the restarts.
let database: Awaited<ReturnType<typeof sharedDatabase>> | undefined;

const start = async () =>
  (keel = await startKeel([BUN, 'src/main.ts'], { APP_DATA_DIR: dataDir, OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, ...database!.env }, ['workspaces']));
const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
  fetch(keel!.urls.workspaces + path, { method: init.method ?? 'GET', headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });

beforeAll(async () => {
  database = await sharedDatabase();
  fake = startFakeOpenAI();
  await start();
  const res = await call('/api/workspaces', { method: 'POST', json: { name: 'agent-restart', template: 'minimal' } });
  expect(res.status).toBe(201);
  workspaceId = (await res.json()).id;
}, 60_000);

afterAll(async () => {
  if (keel && keel.proc.exitCode === null) await keel.stop();
  fake.close();
  removeInstanceObjects(keelInstance(dataDir));
  rmSync(dataDir, { recursive: true, force: true });
  await database?.drop();
}, 60_000);

/** Starts a slow streamed turn and returns once the client has seen two deltas. */
async function turnInFlight(): Promise<{ session: string; seen: string }> {
  const s = await (await call('/api/agent/sessions', { method: 'POST', json: { workspaceId, model: 'openai/slow' } })).json();
  const res = await call(`/api/agent/sessions/${s.id}/messages`, { method: 'POST', json: { message: 'go', stream: true } });
  const reader = sseReader(res);
  const seen = [parse((await reader.nextEvent())!), parse((await reader.nextEvent())!)];
  return { session: s.id, seen: deltas(seen) };
}

async function expectInterrupted(session: string, seen: string) {
  const got = await (await call(`/api/agent/sessions/${session}`)).json();
  expect(got.busy).toBe(false);
  const last = got.messages.at(-1);
  expect(last.finishReason).toBe('interrupted');
  expect(last.content.startsWith(seen)).toBe(true);
  const log = await readAll(await call(`/api/agent/sessions/${session}/events`));
  expect(log.at(-1)).toMatchObject({ event: 'done', data: { finishReason: 'interrupted', content: last.content } });
  expect(deltas(log)).toBe(last.content);
  expect(log.filter((e) => e.event === 'done')).toHaveLength(1);
  // The session takes messages again.
  fake.queue({ text: ['back'] });
  const again = await call(`/api/agent/sessions/${session}/messages`, { method: 'POST', json: { message: 'again' } });
  expect(await again.json()).toMatchObject({ content: 'back', finishReason: 'stop' });
}

test('a turn cut short by a crash ends as interrupted after the restart, its content kept', async () => {
  const { session, seen } = await turnInFlight();
  keel!.proc.kill('SIGKILL');
  await keel!.proc.exited;
  await start();
  await expectInterrupted(session, seen);
}, 60_000);

test('a turn in flight at SIGTERM ends as interrupted before Keel exits; a waiting send gets its reply', async () => {
  const { session, seen } = await turnInFlight();
  const other = await (await call('/api/agent/sessions', { method: 'POST', json: { workspaceId, model: 'openai/slow' } })).json();
  const asked = fake.requests.length + 1;
  const waiting = call(`/api/agent/sessions/${other.id}/messages`, { method: 'POST', json: { message: 'go' } });
  await fake.waitForRequests(asked);
  const exited = keel!.stop();
  const reply = await waiting;
  expect(reply.status).toBe(200);
  expect(await reply.json()).toMatchObject({ role: 'assistant', finishReason: 'interrupted' });
  expect(await exited).toBe(0);
  await start();
  await expectInterrupted(session, seen);
}, 60_000);

/** Starts a turn whose run_command call waits for approval; returns once the approval event is seen. */
async function pausedTurn(command: string): Promise<{ session: string; approval: any }> {
  const s = await (await call('/api/agent/sessions', { method: 'POST', json: { workspaceId, model: 'openai/tools', toolApproval: 'always' } })).json();
  const res = await call(`/api/agent/sessions/${s.id}/messages`, { method: 'POST', json: { message: JSON.stringify([{ name: 'run_command', input: { command } }]), stream: true } });
  const reader = sseReader(res);
  for (;;) {
    const f = await reader.nextEvent(20_000);
    if (!f) throw new Error('the stream ended before its approval event');
    const e = parse(f);
    if (e.event === 'approval') return { session: s.id, approval: e.data };
  }
}

/** After the restart the turn still waits; approving it runs the call and the turn ends normally. */
async function expectStillWaiting(session: string, approval: any, expected: string) {
  const got = await (await call(`/api/agent/sessions/${session}`)).json();
  expect(got).toMatchObject({ status: 'awaiting_approval', busy: true });
  expect((await (await call(`/api/agent/sessions/${session}/approvals`)).json()).approvals).toEqual([expect.objectContaining({ id: approval.id, status: 'pending' })]);
  const after = got.lastEventId;
  const decided = await call(`/api/agent/sessions/${session}/approvals/${approval.id}`, { method: 'POST', json: { decision: 'approve' } });
  expect(decided.status).toBe(200);
  const log = await readAll(await call(`/api/agent/sessions/${session}/events?after=${after}`));
  expect(log.find((e) => e.event === 'tool')!.data).toMatchObject({ id: approval.toolCallId, output: { exitCode: 0, stdout: expected } });
  expect(log.at(-1)).toMatchObject({ event: 'done', data: { finishReason: 'stop' } });
  const whole = await readAll(await call(`/api/agent/sessions/${session}/events`));
  expect(whole.filter((e) => e.event === 'approval')).toHaveLength(1);
  expect(whole.filter((e) => e.event === 'done')).toHaveLength(1);
}

test('a turn waiting for approval survives SIGTERM: after the restart it still waits, and approving it goes on', async () => {
  const { session, approval } = await pausedTurn('echo after-sigterm');
  expect(await keel!.stop()).toBe(0);
  await start();
  await expectStillWaiting(session, approval, 'after-sigterm\n');
}, 60_000);

test('a turn waiting for approval survives a crash: after the restart it still waits, and approving it goes on', async () => {
  const { session, approval } = await pausedTurn('echo after-crash');
  keel!.proc.kill('SIGKILL');
  await keel!.proc.exited;
  await start();
  await expectStillWaiting(session, approval, 'after-crash\n');
}, 60_000);
