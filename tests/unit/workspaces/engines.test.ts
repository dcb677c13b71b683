// APP_ENGINES as start-up reads it, and engine/engines.ts over in-memory engines: where a new
// workspace is placed, which engine a call about a workspace reaches, and an engine that stops
// answering and comes back. The same over two real dockerds: tests/workspaces/engines.
import { describe, expect, test } from 'bun:test';
import { ConfigError } from '../../../src/platform/config';
import { createLogger } from '../../../src/platform/runtime';
import { EngineError, LABEL_WORKSPACE } from '../../../src/services/workspaces/engine/engine';
import { createEngines, type EngineLocator } from '../../../src/services/workspaces/engine/engines';
import { loadWorkspacesConfig } from '../../../src/services/workspaces/workspaces.config';
import { createMemoryEngine, type MemoryEngine } from '../../helpers/memory-engine';
import { waitFor } from '../../helpers/wait';

const GiB = 1024 ** 3;

function configError(env: Record<string, string>): string {
  try {
    loadWorkspacesConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error('the configuration was accepted');
}

describe('APP_ENGINES', () => {
  test('unset, there is one engine named default at DOCKER_HOST with the whole pool', () => {
    const c = loadWorkspacesConfig({ DOCKER_HOST: 'unix:///run/x.sock' });
    expect(c.engines).toEqual([{ name: 'default', host: 'unix:///run/x.sock', certPath: undefined, firewall: 'required', pool: '10.213.0.0/16' }]);
  });

  test('each engine gets its own part of the pool, in the order named, and its options', () => {
    const c = loadWorkspacesConfig({
      APP_ENGINES: 'a=unix:///run/a.sock,b=tcp://10.0.0.5:2376?certs=/etc/keel/b&firewall=off,c=unix:///run/c.sock?netns=keel-c',
    });
    expect(c.engines.map((e) => [e.name, e.host, e.pool, e.firewall])).toEqual([
      ['a', 'unix:///run/a.sock', '10.213.0.0/18', 'required'],
      ['b', 'tcp://10.0.0.5:2376', '10.213.64.0/18', 'off'],
      ['c', 'unix:///run/c.sock', '10.213.128.0/18', 'required'],
    ]);
    expect(c.engines[1]!.certPath).toBe('/etc/keel/b');
    expect(c.engines[2]!.netns).toBe('/run/netns/keel-c');
  });

  test('a malformed list, a name given twice, an unknown option or overlapping pools stop start-up naming the variable', () => {
    for (const bad of [
      'a=/run/a.sock',
      'a=unix:///run/a.sock,a=unix:///run/b.sock',
      'a=unix:///run/a.sock?colour=red',
      'a=unix:///run/a.sock?pool=10.213.0.0/17,b=unix:///run/b.sock?pool=10.213.64.0/18',
      'a=unix:///run/a.sock?pool=192.168.0.0/24',
    ]) {
      expect(configError({ APP_ENGINES: bad })).toStartWith('APP_ENGINES');
    }
  });
});

/** Two memory engines behind createEngines, with the placement load and the workspace rows a test sets. */
function twoEngines(opts: { memory?: Record<string, number>; load?: Record<string, number>; images?: Record<string, string[]> } = {}) {
  const engines: Record<string, MemoryEngine> = {
    a: createMemoryEngine({ images: opts.images?.a }),
    b: createMemoryEngine({ images: opts.images?.b }),
  };
  for (const [name, bytes] of Object.entries(opts.memory ?? {})) engines[name]!.memoryBytes = async () => bytes;
  const rows = new Map<string, string>();
  const locate: EngineLocator = {
    workspace: async (id) => rows.get(id),
    container: async () => undefined,
    volume: async () => undefined,
    load: async (name) => ({ active: opts.load?.[name] ?? 0, memoryBytes: (opts.load?.[name] ?? 0) * GiB }),
  };
  const settings = loadWorkspacesConfig({ APP_ENGINES: 'a=unix:///a.sock,b=unix:///b.sock' }).engines;
  const set = createEngines({ settings, connect: (s) => engines[s.name]!, locate, log: createLogger({}, 'error'), checkSeconds: 60 });
  return { set, engines, rows };
}

describe('placement', () => {
  test('the engine with fewer active workspaces takes the new one', async () => {
    const { set } = twoEngines({ load: { a: 3, b: 1 } });
    expect(await set.place('img:1', GiB)).toBe('b');
  });

  test('with as many on each, the engine that has the image already', async () => {
    const { set } = twoEngines({ load: { a: 1, b: 1 }, images: { b: ['img:1'] } });
    expect(await set.place('img:1', GiB)).toBe('b');
  });

  test('an engine without room for the template goes last, however empty', async () => {
    const { set } = twoEngines({ memory: { a: 4 * GiB, b: 64 * GiB }, load: { a: 0, b: 5 } });
    expect(await set.place('img:1', 8 * GiB)).toBe('b');
  });

  test('an engine that does not answer is left out; none answering is EngineError unavailable', async () => {
    const { set, engines } = twoEngines({ load: { a: 0, b: 5 } });
    engines.a!.setUnavailable(true);
    expect(await set.place('img:1', GiB)).toBe('b');
    engines.b!.setUnavailable(true);
    const err = await set.place('img:1', GiB).catch((e) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err.kind).toBe('unavailable');
  });
});

describe('routing', () => {
  test("a workspace's volume and container are made on its recorded engine", async () => {
    const { set, engines, rows } = twoEngines();
    rows.set('ws_1', 'b');
    await set.routed.createVolume('vol-1', { [LABEL_WORKSPACE]: 'ws_1' });
    expect(engines.b!.volumes.has('vol-1')).toBe(true);
    expect(engines.a!.volumes.has('vol-1')).toBe(false);
  });

  test("while its engine is known down a workspace's calls fail at once, and it is back after the next check", async () => {
    const { set, engines } = twoEngines();
    engines.b!.setUnavailable(true);
    await expect(set.routed.createVolume('vol-2', { [LABEL_WORKSPACE]: 'nope' })).resolves.toBeUndefined(); // no row: the first engine
    const err = await set.at('b').createVolume('vol-3', {}).catch((e) => e);
    expect(err.kind).toBe('unavailable');
    expect(() => set.requireUp('b')).toThrow(EngineError);
    const back: string[] = [];
    set.onBack((n) => back.push(n));
    engines.b!.setUnavailable(false);
    set.start();
    try {
      await waitFor('engine b to be back', async () => back.includes('b'), 2_000, 5);
      expect(set.requireUp('b')).toBe('b');
    } finally {
      set.stop();
    }
  });
});
