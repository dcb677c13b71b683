// The workspace state machine (lifecycle/state-machine.ts, through the lifecycle service the routes
// use) against the in-memory engine of tests/helpers/memory-engine.ts: which moves each status
// allows, how the engine's answers settle a workspace, and what is published, in milliseconds and
// without dockerd. The same behaviour on the real engine, through HTTP: tests/workspaces/lifecycle.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError, meaningOf } from '../../../../src/platform/errors';
import { workspaceErrorTable } from '../../../../src/services/workspaces/workspaces.errors';
import { createMemoryBus } from '../../../../src/platform/bus/memory';
import type { WorkspaceEventPayload } from '../../../../src/platform/bus/subjects';
import { sqliteStore } from '../../../../src/platform/store';
import { openDb } from '../../../../src/platform/db';
import { createLogger, systemClock } from '../../../../src/platform/runtime';
import { EngineError } from '../../../../src/services/workspaces/engine/engine';
import { createAccess } from '../../../../src/services/workspaces/access';
import { createActivity } from '../../../../src/services/workspaces/activity';
import { createEngines } from '../../../../src/services/workspaces/engine/engines';
import { createQuotas } from '../../../../src/services/workspaces/quotas';
import { createLifecycle, type Lifecycle } from '../../../../src/services/workspaces/lifecycle/lifecycle.service';
import { loadWorkspacesConfig } from '../../../../src/services/workspaces/workspaces.config';
import { createTemplateRegistry } from '../../../../src/services/workspaces/images/templates';
import { createMemoryEngine, type MemoryEngine } from '../../../helpers/memory-engine';
import { waitFor } from '../../../helpers/wait';

const alice = { id: 'alice', admin: false };
const bob = { id: 'bob', admin: false };

let dataDir: string;
let engine: MemoryEngine;
let lifecycle: Lifecycle;
let events: string[];
let closeDb: () => void;

/** A lifecycle over a fresh SQLite file, the memory bus and a fresh memory engine that has the templates' images. */
async function startLifecycle() {
  dataDir = mkdtempSync(join(tmpdir(), 'keel-unit-sm-'));
  const db = openDb(dataDir);
  closeDb = () => db.$client.close();
  const log = createLogger({}, 'error');
  const bus = createMemoryBus(log);
  events = [];
  bus.subscribe('evt.workspace.>', (e) => void events.push(`${(e as WorkspaceEventPayload).event}:${(e as WorkspaceEventPayload).workspace.status}`));
  const settings = loadWorkspacesConfig({ APP_WORKSPACE_FIREWALL: 'off', APP_WORKSPACE_PORT_RANGE: '20000-20089' });
  engine = createMemoryEngine({ images: [settings.minimalImage, settings.bunImage] });
  const store = sqliteStore(db);
  const access = createAccess(store);
  const quotas = createQuotas({ store, limits: settings.quotas });
  const engines = createEngines({
    settings: settings.engines,
    connect: () => engine,
    locate: { workspace: async (id) => (await access.row(id))?.engine, container: access.engineOfContainer, volume: access.engineOfVolume, load: async () => ({ active: 0, memoryBytes: 0 }) },
    log,
    checkSeconds: 60,
  });
  lifecycle = createLifecycle({ store, bus, log, clock: systemClock, settings, engine: engines.routed, engines, access, activity: createActivity({ clock: systemClock, log }), quotas, templates: createTemplateRegistry(), instance: 'keel_unit', snapshotDir: join(dataDir, 'snapshots'), codeKey: Buffer.alloc(32, 7) });
  await lifecycle.startUp();
}

/** The workspace once its status is one of `statuses`. */
const settled = (id: string, ...statuses: string[]) =>
  waitFor(`workspace ${id} to be ${statuses.join(' or ')}`, async () => {
    // The list's view, not get(): get also samples live stats, which waits between two samples.
    const w = (await lifecycle.list(alice, {})).find((v) => v.id === id);
    return w && statuses.includes(w.status) ? w : null;
  }, 2_000, 5);

async function createRunning(name = 'demo') {
  const created = await lifecycle.create(alice, { name, template: 'minimal' } as Parameters<Lifecycle['create']>[1]);
  return settled(created.id, 'running', 'failed');
}

/** The AppError a call throws (synchronously or not). */
async function refusal(fn: () => unknown): Promise<AppError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('the call was not refused');
}

beforeEach(startLifecycle);
afterEach(async () => {
  await lifecycle.close();
  closeDb();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('create', () => {
  test('answers creating at once, then the workspace runs in its own container, volume and network', async () => {
    const created = await lifecycle.create(alice, { name: 'demo', template: 'minimal' } as Parameters<Lifecycle['create']>[1]);
    expect(created.status).toBe('creating');
    const w = await settled(created.id, 'running', 'failed');
    expect(w.status).toBe('running');
    const [c] = [...engine.containers.values()];
    expect(c!.running).toBe(true);
    expect(c!.spec.network).toBe(`keel-${created.id}`);
    expect(engine.volumes.has(c!.spec.volume)).toBe(true);
    expect(engine.networks.has(`keel-${created.id}`)).toBe(true);
    await waitFor('the started event', () => events.includes('workspace.started:running'), 1_000, 5);
    expect(events[0]).toBe('workspace.created:creating');
  });

  test('an engine that refuses the container leaves the workspace failed with the engine\'s reason', async () => {
    engine.failNext('createContainer', new EngineError('no space left on device', 'failed'));
    const w = await createRunning();
    expect(w.status).toBe('failed');
    expect(w.reason).toBe('engine: no space left on device');
    await waitFor('the failed event', () => events.includes('workspace.failed:failed'), 1_000, 5);
  });

  test('a container that exits at its first start fails the workspace with the exit code', async () => {
    const realCreate = engine.createContainer;
    engine.createContainer = async (spec) => {
      const id = await realCreate(spec);
      engine.exitOnStart(id, 3);
      return id;
    };
    const w = await createRunning();
    expect(w.status).toBe('failed');
    expect(w.reason).toContain('the container exited at start (exit code 3');
  });

  test('a workspace that failed during creation cannot be started: 409 says to create it again', async () => {
    engine.failNext('createContainer', new EngineError('boom', 'failed'));
    const w = await createRunning();
    const e = await refusal(() => lifecycle.start(alice, w.id));
    expect(e.code).toBe('INVALID_TRANSITION');
    expect(meaningOf(e, workspaceErrorTable).status).toBe(409);
    expect(e.message).toContain('delete it and create it again');
  });

  test('no engine answering refuses the create with 503 and stores nothing', async () => {
    engine.setUnavailable(true);
    const e = await refusal(() => lifecycle.create(alice, { name: 'demo', template: 'minimal' } as Parameters<Lifecycle['create']>[1]));
    expect(meaningOf(e, workspaceErrorTable).status).toBe(503);
    expect(await lifecycle.list(alice, {})).toEqual([]);
  });
});

describe('stop, start and restart', () => {
  test('stop moves a running workspace to stopping, then stopped, and its container no longer runs', async () => {
    const w = await createRunning();
    expect(await lifecycle.stop(alice, w.id, false)).toEqual({ id: w.id, status: 'stopping' });
    expect((await settled(w.id, 'stopped')).reason ?? null).toBeNull();
    expect(engine.containers.get(w.containerId!)!.running).toBe(false);
    await waitFor('the stopped event', () => events.includes('workspace.stopped:stopped'), 1_000, 5);
  });

  test('stopping a stopped workspace is 409 INVALID_TRANSITION naming the statuses that allow it', async () => {
    const w = await createRunning();
    await lifecycle.stop(alice, w.id, false);
    await settled(w.id, 'stopped');
    const e = await refusal(() => lifecycle.stop(alice, w.id, false));
    expect(e.code).toBe('INVALID_TRANSITION');
    expect(e.details).toEqual({ status: 'stopped', operation: 'stop', allowedFrom: ['running', 'starting', 'restarting', 'paused'] });
  });

  test('start runs a stopped workspace again in the same container', async () => {
    const w = await createRunning();
    await lifecycle.stop(alice, w.id, false);
    await settled(w.id, 'stopped');
    expect(await lifecycle.start(alice, w.id)).toEqual({ id: w.id, status: 'starting' });
    const again = await settled(w.id, 'running');
    expect(again.containerId).toBe(w.containerId);
  });

  test('starting a running workspace is 409', async () => {
    const w = await createRunning();
    expect((await refusal(() => lifecycle.start(alice, w.id))).code).toBe('INVALID_TRANSITION');
  });

  test('restart answers restarting, ends running, and publishes restarted then started', async () => {
    const w = await createRunning();
    events.length = 0;
    expect(await lifecycle.restart(alice, w.id)).toEqual({ id: w.id, status: 'restarting' });
    await settled(w.id, 'running');
    await waitFor('the started event', () => events.includes('workspace.started:running'), 1_000, 5);
    expect(events).toEqual(['workspace.restarted:running', 'workspace.started:running']);
  });

  test("another actor's workspace is 404 to every operation", async () => {
    const w = await createRunning();
    for (const op of [() => lifecycle.start(bob, w.id), () => lifecycle.stop(bob, w.id, false), () => lifecycle.restart(bob, w.id), () => lifecycle.get(bob, w.id)]) {
      expect((await refusal(op)).code).toBe('WORKSPACE_NOT_FOUND');
    }
  });
});

describe('what the engine reports while Keel runs', () => {
  test('a container that exits by itself makes the workspace stopped', async () => {
    const w = await createRunning();
    engine.exitOutside(w.containerId!, 0);
    expect((await settled(w.id, 'stopped')).status).toBe('stopped');
  });

  test('a container removed outside Keel fails the workspace, and start recreates it from the template', async () => {
    const w = await createRunning();
    engine.removeOutside(w.containerId!);
    const failed = await settled(w.id, 'failed');
    expect(failed.reason).toContain('the container was removed outside Keel');
    lifecycle.start(alice, w.id);
    const again = await settled(w.id, 'running');
    expect(again.containerId).not.toBe(w.containerId);
    expect(engine.containers.get(again.containerId!)!.running).toBe(true);
  });
});

describe('delete', () => {
  test('removes the container, the network and, when asked, the volume', async () => {
    const w = await createRunning();
    const volume = engine.containers.get(w.containerId!)!.spec.volume;
    expect(await lifecycle.remove(alice, w.id, true)).toEqual({ id: w.id, deleted: true });
    expect(engine.containers.size).toBe(0);
    expect(engine.networks.size).toBe(0);
    expect(engine.volumes.has(volume)).toBe(false);
    expect((await refusal(() => lifecycle.get(alice, w.id))).code).toBe('WORKSPACE_NOT_FOUND');
  });

  test('without volumes the volume stays for a later workspace', async () => {
    const w = await createRunning();
    const volume = engine.containers.get(w.containerId!)!.spec.volume;
    await lifecycle.remove(alice, w.id, false);
    expect(engine.volumes.has(volume)).toBe(true);
  });
});
