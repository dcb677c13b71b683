// GET /api/events through HTTP against a real engine: each actor sees the events of its own
// workspaces only (admins: all), in order with ids; a reconnect with Last-Event-ID gets what it
// missed; an id Keel does not hold answers `reset`; the stream needs a token; it is in OpenAPI.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader, type SseFrame, type SseReader } from '../../helpers/sse';
import { waitFor } from '../../helpers/docker';
import { closeAndClean, createRunning, errorCode } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
const open: SseReader[] = [];

async function follow(as: string, lastEventId?: string): Promise<SseReader> {
  const res = await p.api('workspaces', '/api/events', { as, headers: lastEventId ? { 'last-event-id': lastEventId } : {} });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toStartWith('text/event-stream');
  const r = sseReader(res);
  open.push(r);
  return r;
}

const data = (f: SseFrame) => JSON.parse(f.data!) as { event: string; owner: string; workspace: { id: string; name: string; status: string } };

/** Workspace events until one for `name` with `event` (inclusive). */
const until = (r: SseReader, name: string, event: string) =>
  r.collect((f) => f.event === 'workspace' && data(f).workspace.name === name && data(f).event === event, 90_000);

beforeAll(async () => {
  // Host ports of its own: other test runs share this engine.
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24200-24249' } });
});

afterAll(async () => {
  for (const r of open) await r.cancel();
  await closeAndClean(p);
});

describe('GET /api/events', () => {
  test('needs a token; documented in OpenAPI as an event stream', async () => {
    const res = await p.api('workspaces', '/api/events', { as: null });
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe('UNAUTHORIZED');
    const doc = (await (await p.api('workspaces', '/openapi.json', { as: null })).json()) as any;
    const op = doc.paths['/api/events'].get;
    expect(Object.keys(op.responses['200'].content)).toContain('text/event-stream');
    expect(op.responses['401']).toBeDefined();
  });

  test('owners see their own workspace events in order, admins all; a resumed stream gets what it missed', async () => {
    const alice = await follow('alice');
    const bob = await follow('bob');
    const admin = await follow('admin');
    for (const r of [alice, bob, admin]) {
      const ready = await r.nextEvent();
      expect(ready?.event).toBe('ready');
      expect(ready?.id).toMatch(/^\d+$/);
    }

    const a = await createRunning(p, 'ev-alice', { as: 'alice', timeoutMs: 90_000 });
    const b = await createRunning(p, 'ev-bob', { as: 'bob', timeoutMs: 90_000 });

    const seenByAlice = await until(alice, 'ev-alice', 'workspace.started');
    expect(seenByAlice.map((f) => data(f).event)).toEqual(['workspace.created', 'workspace.started']);
    expect(seenByAlice.every((f) => data(f).owner === 'alice' && data(f).workspace.id === a.id)).toBe(true);
    expect(data(seenByAlice[0]!).workspace.status).toBe('creating');
    expect(data(seenByAlice[1]!).workspace.status).toBe('running');
    const ids = seenByAlice.map((f) => Number(f.id));
    expect(ids[1]!).toBeGreaterThan(ids[0]!);

    const seenByBob = await until(bob, 'ev-bob', 'workspace.started');
    expect(seenByBob.every((f) => data(f).owner === 'bob')).toBe(true);

    const seenByAdmin = await until(admin, 'ev-bob', 'workspace.started');
    expect(new Set(seenByAdmin.map((f) => data(f).workspace.name))).toEqual(new Set(['ev-alice', 'ev-bob']));

    // Alice goes away after `created`, then comes back: the stream replays what came after.
    const afterCreated = seenByAlice[0]!.id!;
    await alice.cancel();
    const del = await p.api('workspaces', `/api/workspaces/${a.id}`, { method: 'DELETE', as: 'alice' });
    expect(del.status).toBe(200);
    const resumed = await follow('alice', afterCreated);
    const replay = await resumed.collect((f) => f.event === 'ready', 30_000);
    expect(replay.map((f) => f.event === 'workspace' ? data(f).event : f.event)).toEqual(['workspace.started', 'workspace.deleted', 'ready']);
    // Bob's events never reach alice, live or replayed.
    const stop = await p.api('workspaces', `/api/workspaces/${b.id}/stop`, { method: 'POST', as: 'bob' });
    expect(stop.status).toBe(200);
    await until(bob, 'ev-bob', 'workspace.stopped');
    const marker = await createRunning(p, 'ev-alice-2', { as: 'alice', timeoutMs: 90_000 });
    const live = await until(resumed, 'ev-alice-2', 'workspace.started');
    expect(live.every((f) => data(f).owner === 'alice')).toBe(true);
    expect(marker.name).toBe('ev-alice-2');
  }, 240_000);

  test('an id Keel does not hold (malformed, from before a restart, or from the future) starts with reset', async () => {
    for (const id of ['nonsense', '1', '99999999999999999']) {
      const r = await follow('alice', id);
      const first = await r.nextEvent();
      expect(first?.event).toBe('reset');
      expect(JSON.parse(first!.data!)).toEqual({ reason: 'unknown-event-id' });
      expect((await r.nextEvent())?.event).toBe('ready');
      await r.cancel();
    }
  });

  test('resuming from the ready id replays nothing: ready comes again with the same id', async () => {
    const first = await follow('carol');
    const ready = await first.nextEvent();
    await first.cancel();
    const again = await follow('carol', ready!.id);
    const next = await again.nextEvent();
    expect(next?.event).toBe('ready');
    expect(next?.id).toBe(ready!.id);
    await again.cancel();
  });

  test('a shutdown ends an open stream with end/shutdown', async () => {
    const q = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '24200-24249' } });
    const res = await q.api('workspaces', '/api/events', { as: 'alice' });
    const r = sseReader(res);
    expect((await r.nextEvent())?.event).toBe('ready');
    const closing = q.close();
    const last = await r.nextEvent();
    expect(last?.event).toBe('end');
    expect(JSON.parse(last!.data!)).toEqual({ reason: 'shutdown' });
    expect(await r.nextEvent()).toBeNull();
    await closing;
  });

  test('an open stream takes one of the actor\'s APP_QUOTA_STREAMS slots until it ends', async () => {
    const q = await startTestPlatform({ services: ['workspaces'], env: { APP_QUOTA_STREAMS: '1', APP_WORKSPACE_PORT_RANGE: '24200-24249' } });
    try {
      const first = sseReader(await q.api('workspaces', '/api/events', { as: 'dave' }));
      expect((await first.nextEvent())?.event).toBe('ready');
      const refused = await q.api('workspaces', '/api/events', { as: 'dave' });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as any).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'streams', limit: 1 } });
      // Another actor is not held back by dave's stream.
      const other = await q.api('workspaces', '/api/events', { as: 'erin' });
      expect(other.status).toBe(200);
      await other.body?.cancel();
      await first.cancel();
      await waitFor('the slot to come back', async () => {
        const again = await q.api('workspaces', '/api/events', { as: 'dave' });
        await again.body?.cancel();
        return again.status === 200;
      });
    } finally {
      await q.close();
    }
  });
});
