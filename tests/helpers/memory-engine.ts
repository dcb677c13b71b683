// An Engine (src/services/workspaces/engine/engine.ts) kept in memory, for the unit tier: the workspace
// state machine and its neighbours run against it in milliseconds, with no dockerd. It keeps what a
// real engine would (images, volumes, networks, containers and whether each runs) and lets a test make
// the engine misbehave the ways Docker does: a call that fails, a container that exits at start, a
// container removed behind Keel's back, an engine that stops answering. Everything else the suite
// checks against the real engine (tests/workspaces/**).
import { EngineError, LABEL_INSTANCE, LABEL_WORKSPACE, type ContainerSpec, type ContainerState, type Engine, type EngineEvent, type ManagedObject, type NetworkInfo } from '../../src/services/workspaces/engine/engine';

interface MemoryContainer {
  id: string;
  spec: ContainerSpec;
  running: boolean;
  paused?: boolean;
  exitCode: number;
  /** Set by exitOnStart: the next start ends at once with this code. */
  exitsWith?: number;
}

export interface MemoryEngine extends Engine {
  readonly images: Set<string>;
  readonly volumes: Map<string, Record<string, string>>;
  readonly networks: Map<string, NetworkInfo & { labels: Record<string, string> }>;
  readonly containers: Map<string, MemoryContainer>;
  /** Every call made, by method name, in order. */
  readonly calls: string[];
  /** The next call of `method` throws `error` (once). */
  failNext(method: keyof Engine, error: Error): void;
  /** Every call fails as an engine that does not answer, until called again with false. */
  setUnavailable(down: boolean): void;
  /** The container's next start exits at once with `exitCode` (a broken entrypoint). */
  exitOnStart(containerId: string, exitCode: number): void;
  /** Removes a container behind Keel's back and tells the event watchers, as `docker rm -f` does. */
  removeOutside(containerId: string): void;
  /** The container stops by itself (its main process ended) and the watchers hear of it. */
  exitOutside(containerId: string, exitCode: number): void;
}

export function createMemoryEngine(opts: { images?: string[] } = {}): MemoryEngine {
  const images = new Set(opts.images ?? []);
  const volumes = new Map<string, Record<string, string>>();
  const networks = new Map<string, NetworkInfo & { labels: Record<string, string> }>();
  const containers = new Map<string, MemoryContainer>();
  const calls: string[] = [];
  const failures = new Map<string, Error>();
  const watchers = new Set<{ instance: string; onEvent: (e: EngineEvent) => void }>();
  let unavailable = false;
  let seq = 0;

  /** Records the call and throws what the test arranged for it. */
  const enter = (method: keyof Engine) => {
    calls.push(method);
    if (unavailable) throw new EngineError('the engine does not answer (memory engine set unavailable)', 'unavailable');
    const f = failures.get(method);
    if (f) {
      failures.delete(method);
      throw f;
    }
  };
  const container = (id: string) => {
    const c = containers.get(id);
    if (!c) throw new EngineError(`no such container: ${id}`, 'not-found');
    return c;
  };
  const emit = (c: MemoryContainer, action: string) => {
    for (const w of watchers) if (c.spec.labels[LABEL_INSTANCE] === w.instance) w.onEvent({ action, workspaceId: c.spec.labels[LABEL_WORKSPACE] ?? '' });
  };
  const managed = <T extends { labels: Record<string, string> }>(items: Iterable<[string, T]>, instance: string): ManagedObject[] =>
    [...items].filter(([, v]) => v.labels[LABEL_INSTANCE] === instance).map(([id, v]) => ({ id, workspaceId: v.labels[LABEL_WORKSPACE] ?? '' }));
  const stop = (c: MemoryContainer, exitCode: number) => {
    if (!c.running) return;
    c.running = false;
    c.paused = false;
    c.exitCode = exitCode;
    emit(c, 'die');
  };

  const engine: MemoryEngine = {
    images,
    volumes,
    networks,
    containers,
    calls,
    failNext: (method, error) => void failures.set(method, error),
    setUnavailable: (down) => void (unavailable = down),
    exitOnStart: (id, exitCode) => void (container(id).exitsWith = exitCode),
    removeOutside(id) {
      const c = container(id);
      containers.delete(id);
      emit(c, 'destroy');
    },
    exitOutside: (id, exitCode) => stop(container(id), exitCode),

    async memoryBytes() {
      return 8 * 1024 ** 3;
    },
    async ping() {
      enter('ping');
    },
    async imageExists(ref) {
      enter('imageExists');
      return images.has(ref);
    },
    async pullImage(ref) {
      enter('pullImage');
      throw new EngineError(`pull access denied for ${ref} (memory engine: no registry)`, 'refused');
    },
    async importImage(_tar, ref) {
      enter('importImage');
      images.add(ref);
    },
    async buildImage(_context, ref) {
      enter('buildImage');
      images.add(ref);
    },
    async buildStreaming(_context, ref, opts) {
      enter('buildStreaming');
      opts.onLine(`Successfully tagged ${ref}`);
      images.add(ref);
    },
    async imageFiles(ref, paths) {
      enter('imageFiles');
      return Object.fromEntries(paths.map((p) => [p, null]));
    },
    async imageConfig(ref) {
      enter('imageConfig');
      return images.has(ref) ? { user: '', workdir: '', env: [], cmd: null, entrypoint: null } : null;
    },
    async createVolume(name, labels) {
      enter('createVolume');
      if (!volumes.has(name)) volumes.set(name, labels);
    },
    async removeVolume(name) {
      enter('removeVolume');
      volumes.delete(name);
    },
    download: async () => null,
    upload: async () => null,
    async fillVolume(name, labels) {
      enter('fillVolume');
      volumes.set(name, labels);
    },
    async createNetwork(spec) {
      enter('createNetwork');
      if (networks.has(spec.name)) throw new EngineError(`network with name ${spec.name} already exists`, 'conflict');
      if ([...networks.values()].some((n) => n.subnet === spec.subnet)) throw new EngineError('Pool overlaps with other one on this address space', 'refused');
      const info = { id: `net${++seq}`, name: spec.name, bridge: `br-mem${seq}`, subnet: spec.subnet, gateway: spec.gateway, workspaceId: spec.labels[LABEL_WORKSPACE] ?? '', labels: spec.labels };
      networks.set(spec.name, info);
      return info;
    },
    async inspectNetwork(name) {
      enter('inspectNetwork');
      return networks.get(name) ?? null;
    },
    async removeNetwork(name) {
      enter('removeNetwork');
      networks.delete(name);
    },
    async listManagedNetworks(instance) {
      enter('listManagedNetworks');
      return managed(networks, instance);
    },
    async managedAddresses() {
      enter('managedAddresses');
      return []; // containers here have no network addresses
    },
    async networkSubnets() {
      enter('networkSubnets');
      return [...networks.values()].map((n) => n.subnet);
    },
    async createContainer(spec) {
      enter('createContainer');
      if (!images.has(spec.image)) throw new EngineError(`No such image: ${spec.image}`, 'not-found');
      if ([...containers.values()].some((c) => c.spec.name === spec.name)) throw new EngineError(`the container name "/${spec.name}" is already in use`, 'conflict');
      const id = `c${++seq}`.padEnd(12, '0');
      containers.set(id, { id, spec, running: false, exitCode: 0 });
      return id;
    },
    async putArchive(id) {
      enter('putArchive');
      container(id);
    },
    async start(id) {
      enter('start');
      const c = container(id);
      if (c.running) return;
      if (c.exitsWith !== undefined) {
        c.exitCode = c.exitsWith;
        c.exitsWith = undefined;
        emit(c, 'die');
        return;
      }
      c.running = true;
      emit(c, 'start');
    },
    async stop(id) {
      enter('stop');
      stop(container(id), 0);
    },
    async kill(id) {
      enter('kill');
      stop(container(id), 137);
    },
    async restart(id) {
      enter('restart');
      const c = container(id);
      stop(c, 0);
      c.running = true;
      emit(c, 'start');
    },
    // Snapshots are tested against the real engine only (tests/workspaces/snapshots/snapshots.test.ts).
    async commit() {
      throw new EngineError('the memory engine makes no snapshots', 'refused');
    },
    async getArchive() {
      throw new EngineError('the memory engine makes no snapshots', 'refused');
    },
    async imageSize(ref) {
      return images.has(ref) ? 0 : null;
    },
    async removeImage(ref) {
      images.delete(ref);
    },
    async listSnapshotImages() {
      return [];
    },
    async pause(id) {
      enter('pause');
      const c = container(id);
      if (!c.running || c.paused) throw new EngineError(`container ${id} is not running or already paused`, 'conflict');
      c.paused = true;
      emit(c, 'pause');
    },
    async unpause(id) {
      enter('unpause');
      const c = container(id);
      if (!c.paused) throw new EngineError(`container ${id} is not paused`, 'conflict');
      c.paused = false;
      emit(c, 'unpause');
    },
    async remove(id) {
      enter('remove');
      const c = containers.get(id);
      if (!c) return;
      containers.delete(id);
      emit(c, 'destroy');
    },
    async inspect(id): Promise<ContainerState | null> {
      enter('inspect');
      const c = containers.get(id);
      return c ? { running: c.running, paused: !!c.paused, exitCode: c.exitCode, oomKilled: false, error: '', networks: [c.spec.network] } : null;
    },
    async stats(id) {
      enter('stats');
      container(id);
      return { memoryUsed: 0, memoryLimit: 0, cpuTotal: 0, systemTotal: 0, onlineCpus: 1 };
    },
    async listManaged(instance) {
      enter('listManaged');
      return managed([...containers].map(([id, c]) => [id, c.spec] as [string, ContainerSpec]), instance);
    },
    async listManagedVolumes(instance) {
      enter('listManagedVolumes');
      return managed([...volumes].map(([name, labels]) => [name, { labels }] as [string, { labels: Record<string, string> }]), instance);
    },
    watchEvents(instance, onEvent) {
      const w = { instance, onEvent };
      watchers.add(w);
      return { stop: () => void watchers.delete(w), ready: Promise.resolve() };
    },
    openLogStreams: 0,
    async logStream() {
      enter('logStream');
      return { done: Promise.resolve(), close() {}, pause() {}, resume() {}, messages: 0 };
    },
    async execStart() {
      enter('execStart');
      throw new EngineError('the memory engine runs no processes', 'refused');
    },
    async execTty() {
      enter('execTty');
      throw new EngineError('the memory engine runs no processes', 'refused');
    },
    async execCollect() {
      enter('execCollect');
      return { exitCode: 0, stdout: '', stderr: '', truncated: false };
    },
    async killProcessGroup() {},
  };
  return engine;
}
