// Several Docker engines (APP_ENGINES) behind the one Engine interface the features use: each call
// goes to the engine of the workspace, container, volume or network it concerns (the `engine`
// column of the workspace row), lists and address lookups take every engine that answers, and
// `place` picks the engine of a new workspace. Each engine is asked every APP_ENGINE_CHECK_SECONDS
// whether it answers; while it does not, calls for its workspaces fail at once as `unavailable`
// (503 ENGINE_UNAVAILABLE) instead of waiting on a dead socket, and when it answers again the
// listeners of onBack reconcile its workspaces.
import { errorFields, type Logger } from '../../../platform/runtime';
import { EngineError, LABEL_WORKSPACE, type Engine, type ManagedObject } from './engine';
import type { EngineSettings } from '../workspaces.config';

/** Where Keel's records put things: an engine name, null for a row made before APP_ENGINES named engines (the first one), undefined when no row knows. */
export interface EngineLocator {
  workspace(id: string): Promise<string | null | undefined>;
  container(id: string): Promise<string | null | undefined>;
  volume(name: string): Promise<string | null | undefined>;
  /** Keel's workspaces on the engine that hold (or are about to hold) a running container, and the memory their templates ask. */
  load(engine: string): Promise<{ active: number; memoryBytes: number }>;
}

/** How long placement waits for an engine's answer before leaving it out. */
const PLACE_TIMEOUT_MS = 5_000;

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, Bun.sleep(ms).then(() => Promise.reject(new EngineError(`${what} did not answer within ${ms / 1000} s`, 'unavailable')))]);

const unavailable = (e: unknown) => e instanceof EngineError && e.kind === 'unavailable';

export function createEngines(deps: { settings: EngineSettings[]; connect: (s: EngineSettings) => Engine; locate: EngineLocator; log: Logger; checkSeconds: number }) {
  const { locate, log } = deps;
  const names = deps.settings.map((s) => s.name);
  const raw = new Map(deps.settings.map((s) => [s.name, deps.connect(s)]));
  const down = new Set<string>();
  // With one engine there is nowhere else to go: every call tries it, as if no outage were known (a
  // blip on a busy engine then fails one call, not every call until the next check).
  const gate = names.length > 1;
  const backListeners: ((name: string) => void)[] = [];
  /** Containers and volumes seen in an engine's lists, for calls no row can place (objects no workspace owns). */
  const seen = new Map<string, string>();
  let timer: ReturnType<typeof setInterval> | undefined;

  /** The recorded name as a configured one: null (a row from before APP_ENGINES) is the first engine. */
  const nameOf = (recorded: string | null | undefined): string => recorded ?? names[0]!;

  function markDown(name: string, e: unknown) {
    if (down.has(name)) return;
    down.add(name);
    log.warn('a workspace engine stopped answering; its workspaces answer 503 ENGINE_UNAVAILABLE until it is back', { engine: name, ...errorFields(e) });
    // Asked again at once: a blip (one refused connection) does not hold its workspaces for a whole period.
    recheck();
  }
  // One round of pings at a time; a round asked for meanwhile runs after it (its answers may be stale).
  let checking: Promise<void> | undefined;
  let again = false;
  const recheck = () => {
    if (checking) {
      again = true;
      return;
    }
    checking = check().finally(() => {
      checking = undefined;
      if (again) {
        again = false;
        recheck();
      }
    });
  };

  /** Throws EngineError `unavailable` when the engine is not configured or known not to answer. */
  function requireUp(recorded: string | null | undefined): string {
    const name = nameOf(recorded);
    if (!raw.has(name)) throw new EngineError(`the workspace's engine ${name} is not in APP_ENGINES`, 'unavailable');
    if (gate && down.has(name)) throw new EngineError(`the workspace's engine ${name} does not answer`, 'unavailable');
    return name;
  }

  /** The engine with each call guarded: a failure that says the engine is gone marks it down at once. */
  function guard(name: string, engine: Engine): Engine {
    return new Proxy(engine, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (gate && down.has(name)) return Promise.reject(new EngineError(`the engine ${name} does not answer`, 'unavailable'));
          const out = v.apply(target, args);
          return out instanceof Promise ? out.catch((e: unknown) => {
            if (unavailable(e)) markDown(name, e);
            throw e;
          }) : out;
        };
      },
    });
  }
  const guarded = new Map([...raw].map(([name, e]) => [name, guard(name, e)]));

  /** The engine `recorded` names; EngineError `unavailable` when it is not configured or known not to answer. */
  const at = (recorded: string | null | undefined): Engine => guarded.get(requireUp(recorded))!;

  const up = () => names.filter((n) => !gate || !down.has(n));

  /** Every answering engine's answer, joined; an engine that fails is left out (and marked down when gone). */
  async function each<T>(fn: (e: Engine, name: string) => Promise<T[]>): Promise<T[]> {
    const parts = await Promise.all(up().map((n) => fn(at(n), n).catch((e) => {
      // One engine: its failure is the caller's to see, as before there were several.
      if (!unavailable(e) || !gate) throw e;
      return [] as T[];
    })));
    return parts.flat();
  }

  /** A list of managed objects from every answering engine, each remembered with its engine. */
  const listed = (fn: (e: Engine) => Promise<ManagedObject[]>) =>
    each(async (e, name) => {
      const objs = await fn(e);
      for (const o of objs) seen.set(o.id, name);
      return objs;
    });

  /** What Keel's records say of an object's engine; with one engine there is nowhere else, so no lookup. */
  const where = async (lookup: () => Promise<string | null | undefined>) => (names.length === 1 ? names[0] : await lookup());
  const ofContainer = async (id: string) => at(seen.get(id) ?? (await where(() => locate.container(id))));
  const ofWorkspace = async (id: string | undefined) => at(id ? await where(() => locate.workspace(id)) : undefined);
  const workspaceOfNetwork = (name: string) => (name.startsWith('keel-') ? name.slice('keel-'.length) : undefined);

  /** For removals (absent is fine): the known engine, else every answering one. */
  async function removeEverywhere(known: string | null | undefined, fn: (e: Engine) => Promise<void>) {
    if (known !== undefined) return fn(at(known));
    await each(async (e) => [await fn(e)]);
  }

  /** The first engine that answers (the first configured one when none does: its call fails as unavailable). */
  const first = () => at(up()[0] ?? names[0]);

  const routed: Engine = {
    async ping() {
      const answers = await Promise.all(names.map((n) => raw.get(n)!.ping().then(() => true, () => false)));
      if (!answers.some(Boolean)) throw new EngineError('no workspace engine answers', 'unavailable');
    },
    memoryBytes: async () => (await each(async (e) => [await e.memoryBytes()])).reduce((a, b) => a + b, 0),
    // Image calls without a workspace (GET /api/templates, template builds) speak of the first engine that answers; provisioning uses at().
    imageExists: (ref) => first().imageExists(ref),
    pullImage: (ref) => first().pullImage(ref),
    importImage: (tar, ref, changes) => first().importImage(tar, ref, changes),
    buildImage: (ctx, ref) => first().buildImage(ctx, ref),
    buildStreaming: (ctx, ref, opts) => first().buildStreaming(ctx, ref, opts),
    imageConfig: (ref) => first().imageConfig(ref),
    imageFiles: (ref, paths) => first().imageFiles(ref, paths),
    createVolume: async (name, labels, size) => (await ofWorkspace(labels[LABEL_WORKSPACE])).createVolume(name, labels, size),
    // keeld's volume is filled per engine by with-daemon.ts on that engine; here: the first that answers.
    fillVolume: (name, labels, image, tar) => first().fillVolume(name, labels, image, tar),
    removeVolume: async (name) => removeEverywhere(seen.get(name) ?? (await where(() => locate.volume(name))), (e) => e.removeVolume(name)),
    createNetwork: async (spec) => (await ofWorkspace(spec.labels[LABEL_WORKSPACE])).createNetwork(spec),
    async inspectNetwork(name) {
      const ws = workspaceOfNetwork(name);
      const known = ws ? await where(() => locate.workspace(ws)) : undefined;
      if (known !== undefined) return at(known).inspectNetwork(name);
      return (await each(async (e) => [await e.inspectNetwork(name)])).find((n) => n !== null) ?? null;
    },
    removeNetwork: async (name) => {
      const ws = workspaceOfNetwork(name);
      return removeEverywhere(ws ? await where(() => locate.workspace(ws)) : undefined, (e) => e.removeNetwork(name));
    },
    listManagedNetworks: (instance) => listed((e) => e.listManagedNetworks(instance)),
    networkSubnets: () => each((e) => e.networkSubnets()),
    async createContainer(spec) {
      const name = nameOf(await where(() => locate.workspace(spec.labels[LABEL_WORKSPACE] ?? '')));
      const id = await at(name).createContainer(spec);
      seen.set(id, name);
      return id;
    },
    putArchive: async (id, path, tar) => (await ofContainer(id)).putArchive(id, path, tar),
    start: async (id) => (await ofContainer(id)).start(id),
    stop: async (id, grace) => (await ofContainer(id)).stop(id, grace),
    kill: async (id) => (await ofContainer(id)).kill(id),
    restart: async (id, grace) => (await ofContainer(id)).restart(id, grace),
    remove: async (id) => removeEverywhere(seen.get(id) ?? (await where(() => locate.container(id))), (e) => e.remove(id)),
    inspect: async (id) => (await ofContainer(id)).inspect(id),
    pause: async (id) => (await ofContainer(id)).pause(id),
    unpause: async (id) => (await ofContainer(id)).unpause(id),
    // Snapshot images live on the engine of the workspace they were taken of (docs/workspaces.md: one engine for snapshots).
    commit: async (id, ref, labels) => (await ofContainer(id)).commit(id, ref, labels),
    getArchive: async (id, path) => (await ofContainer(id)).getArchive(id, path),
    imageSize: async (ref) => (await each(async (e) => [await e.imageSize(ref)])).find((n) => n !== null) ?? null,
    removeImage: (ref) => removeEverywhere(undefined, (e) => e.removeImage(ref)),
    listSnapshotImages: (instance) => each((e) => e.listSnapshotImages(instance)),
    stats: async (id) => (await ofContainer(id)).stats(id),
    listManaged: (instance) => listed((e) => e.listManaged(instance)),
    managedAddresses: () => each((e) => e.managedAddresses()),
    listManagedVolumes: (instance) => listed((e) => e.listManagedVolumes(instance)),
    watchEvents(instance, onEvent, onGap) {
      // Each engine's own watcher reconnects after an outage and reports the gap, which reconciles.
      const watchers = names.map((n) => raw.get(n)!.watchEvents(instance, onEvent, onGap));
      return { stop: () => watchers.forEach((w) => w.stop()), ready: Promise.all(watchers.map((w) => w.ready)).then(() => {}) };
    },
    get openLogStreams() {
      return [...raw.values()].reduce((a, e) => a + e.openLogStreams, 0);
    },
    logStream: async (id, opts, onLine) => (await ofContainer(id)).logStream(id, opts, onLine),
    execStart: async (id, opts, onChunk) => (await ofContainer(id)).execStart(id, opts, onChunk),
    execCollect: async (id, cmd, maxBytes) => (await ofContainer(id)).execCollect(id, cmd, maxBytes),
    execTty: async (id, opts, onData) => (await ofContainer(id)).execTty(id, opts, onData),
    killProcessGroup: async (id, pid) => (await ofContainer(id)).killProcessGroup(id, pid),
    download: async (id, path, range) => (await ofContainer(id)).download(id, path, range),
    upload: async (id, path, body, maxBytes) => (await ofContainer(id)).upload(id, path, body, maxBytes),
  };

  // Routing may throw before any promise exists (an engine known down): callers get a rejection, as from any engine call.
  for (const [k, v] of Object.entries(routed)) {
    if (typeof v !== 'function' || k === 'watchEvents') continue;
    (routed as unknown as Record<string, unknown>)[k] = (...args: unknown[]) => {
      try {
        return (v as (...a: unknown[]) => unknown)(...args);
      } catch (e) {
        return Promise.reject(e);
      }
    };
  }

  /** Asks every engine whether it answers; one that answers again is announced to onBack's listeners. */
  async function check() {
    await Promise.all(
      names.map(async (name) => {
        try {
          await raw.get(name)!.ping();
          if (!down.delete(name)) return;
          log.info('a workspace engine answers again; reconciling its workspaces', { engine: name });
          for (const fn of backListeners) fn(name);
        } catch (e) {
          markDown(name, e);
        }
      }),
    );
  }

  return {
    names,
    routed,
    at,
    nameOf,
    requireUp,
    /** Whether the engine a row records answers, as far as Keel knows. */
    isUp: (recorded: string | null | undefined) => raw.has(nameOf(recorded)) && !(gate && down.has(nameOf(recorded))),
    settingsOf: (recorded: string | null | undefined) => deps.settings.find((s) => s.name === nameOf(recorded)) ?? deps.settings[0]!,

    /**
     * The engine a new workspace goes on (docs/workspaces.md, "Placement"): among the engines that
     * answer, those with room for the template's memory (host memory less what Keel's active
     * workspaces there ask), then the fewest active workspaces, then one that has the image already,
     * then the most free memory, then the order of APP_ENGINES. EngineError `unavailable` when none answers.
     */
    async place(image: string, memoryBytes: number): Promise<string> {
      if (names.length === 1) {
        await at(names[0]).ping();
        return names[0]!;
      }
      const candidates = await Promise.all(
        up().map(async (name) => {
          try {
            const e = at(name);
            const [total, hasImage] = await within(Promise.all([e.memoryBytes(), e.imageExists(image)]), PLACE_TIMEOUT_MS, `engine ${name}`);
            const load = await locate.load(name);
            return { name, hasImage, active: load.active, free: total - load.memoryBytes };
          } catch (e) {
            if (unavailable(e)) markDown(name, e);
            else log.warn('an engine is left out of placement', { engine: name, ...errorFields(e) });
            return null;
          }
        }),
      );
      const answering = candidates.filter((c) => c !== null);
      if (answering.length === 0) throw new EngineError('no workspace engine answers', 'unavailable');
      const roomy = answering.filter((c) => c.free >= memoryBytes);
      const pool = roomy.length ? roomy : answering;
      pool.sort((a, b) => a.active - b.active || Number(b.hasImage) - Number(a.hasImage) || b.free - a.free || names.indexOf(a.name) - names.indexOf(b.name));
      return pool[0]!.name;
    },

    /** Calls `fn` with an engine's name each time it answers again after an outage. */
    onBack(fn: (name: string) => void) {
      backListeners.push(fn);
    },

    /** Starts asking the engines whether they answer (the first round at once). */
    start() {
      if (timer) return;
      recheck();
      timer = setInterval(recheck, deps.checkSeconds * 1000);
      timer.unref?.();
    },

    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}

export type Engines = ReturnType<typeof createEngines>;
