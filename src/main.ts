// Start-up: config -> every service's port bound (GET /health answers from here) -> the services'
// modules -> database + migrations -> bus -> services -> each app takes its port. SIGTERM/SIGINT ->
// drain and stop. Only what binds the ports is imported up front: the services, the store, the bus
// and Elysia load after (docs/benchmarks.md, start-up).
import { loadConfig, ConfigError, type Config, type ServiceName } from './platform/config';
import { openListener, type Listener } from './platform/http/listener';
import { MAX_BODY_BYTES } from './platform/json';
import { createLogger, systemClock } from './platform/runtime';
import type { Store } from './platform/store';
import type { Bus } from './platform/bus';
import type { Service, ServiceDefinition, ServiceDeps } from './platform/service';
import { deferRarelyUsedModules } from './lazy-modules';

// Before any service module loads: dockerode's gRPC and SSH parts load on first use (lazy-modules.ts).
Bun.plugin(deferRarelyUsedModules({ bundling: false }));

/**
 * The largest libraries, each loaded in a turn of the event loop of its own before the services'
 * modules, so that no single load holds a /health answer for long (a module graph loads in one block).
 */
const SHARED_LIBRARIES = [() => import('@sinclair/typebox'), () => import('elysia'), () => import('drizzle-orm'), () => import('jose')];

/** Each service's module, loaded once its port is bound (the workspaces' Docker client, ~0.1 s, in a turn of its own). */
const definitions: Record<ServiceName, () => Promise<ServiceDefinition<any>>> = {
  identity: async () => (await import('./services/identity')).identityService,
  workspaces: async () => {
    await import('./services/workspaces/engine/docker');
    await yieldToRequests();
    return (await import('./services/workspaces')).workspacesService;
  },
  catalog: async () => (await import('./services/catalog')).catalogService,
  sources: async () => (await import('./services/sources')).sourcesService,
  workers: async () => (await import('./services/workers')).workersService,
  playback: async () => (await import('./services/playback')).playbackService,
};

/**
 * The largest body a service's routes stream themselves, which Bun must let through: the workspaces'
 * uploads are counted by their route (413 FILE_TOO_LARGE), every other body by the platform's limit
 * as it is read (413 PAYLOAD_TOO_LARGE). Other services keep MAX_BODY_BYTES, checked before routing
 * (platform/http/errors.ts). Known here, not from the service: the port is bound before its module loads.
 */
const STREAMED_BODY_BYTES: Partial<Record<ServiceName, number>> = { workspaces: Number.MAX_SAFE_INTEGER };

/** Lets the event loop answer what arrived (a /health) before the next slow step of start-up. */
const yieldToRequests = async () => {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

export interface Platform {
  urls: Partial<Record<ServiceName, string>>;
  /** The platform's bus, so tests can attach a component (a guarded app, a subscriber) to it. */
  bus: Bus;
  stop(): Promise<void>;
}

/** PostgreSQL when APP_DATABASE_URL names one, else the SQLite file of the data dir. */
async function openStore(config: Config): Promise<Store> {
  const { openPostgresStore, sqliteStore } = await import('./platform/store');
  if (!config.databaseUrl) return sqliteStore((await import('./platform/db')).openDb(config.dataDir));
  try {
    return await openPostgresStore(config.databaseUrl);
  } catch (e) {
    throw new ConfigError('APP_DATABASE_URL', `PostgreSQL could not be used: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Starts the services named in the config; used by the CLI entry below and by tests. */
export async function startPlatform(env: Record<string, string | undefined>): Promise<Platform> {
  const config = loadConfig(env);
  const log = createLogger({ app: 'keel' }, config.logLevel);
  // Each step's duration at debug level: what start-up waits for (docs/benchmarks.md, start-up).
  let stepStarted = performance.now();
  const step = (name: string) => {
    const now = performance.now();
    log.debug('start-up step', { step: name, ms: Math.round((now - stepStarted) * 10) / 10, sinceStart: Math.round(process.uptime() * 1000), rssMiB: Math.round(process.memoryUsage.rss() / 104857.6) / 10 });
    stepStarted = now;
  };
  // Ports first: /health answers while the rest loads; other requests wait for their app (listener.ts).
  const listeners = new Map<ServiceName, Listener>();
  const abandon = () => Promise.all([...listeners.values()].map((l) => l.abandon()));
  try {
    for (const name of config.services) {
      const maxRequestBodySize = Math.max(MAX_BODY_BYTES, STREAMED_BODY_BYTES[name] ?? 0) + 1024;
      listeners.set(name, openListener({ hostname: config.host, port: config.ports[name], maxRequestBodySize, clock: systemClock }));
    }
  } catch (e) {
    await abandon();
    throw e;
  }
  step('ports bound');
  let store: Store | undefined;
  let bus: Bus | undefined;
  const shutdown = new AbortController();
  const urls: Platform['urls'] = {};
  const running: { name: ServiceName; service: Service; server: { stop(force?: boolean): Promise<void> | void } }[] = [];
  try {
    // One module graph at a time, the event loop free in between: a /health asked meanwhile is answered.
    const loaded = new Map<ServiceName, ServiceDefinition<any>>();
    for (const load of SHARED_LIBRARIES) {
      await yieldToRequests();
      await load();
    }
    step('shared libraries loaded');
    for (const name of config.services) {
      await yieldToRequests();
      loaded.set(name, await definitions[name]());
      step(`${name} loaded`);
    }
    // Every named service's own variables, before anything opens: a bad one stops start-up here.
    const serviceConfigs = new Map(config.services.map((name) => [name, loaded.get(name)!.loadConfig(env)]));
    await yieldToRequests();
    store = await openStore(config);
    step('store opened');
    bus = await (await import('./platform/bus')).openBus(config.bus, log.child({ component: 'bus' }), { maxDeliver: config.busMaxDeliver });
    step('bus opened');
    const deps: ServiceDeps = { config, store, bus, log, clock: systemClock, shutdown: shutdown.signal, peers: urls };
    for (const name of config.services) {
      await yieldToRequests();
      const service = await loaded.get(name)!.create({ ...deps, log: log.child({ service: name }) }, serviceConfigs.get(name));
      step(`${name} created`);
      const listener = listeners.get(name)!;
      listener.attach(service.app);
      const server = listener.server;
      urls[name] = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`;
      running.push({ name, service, server });
      await service.start?.();
      step(`${name} started`);
      log.info('service listening', { service: name, url: urls[name] });
    }
  } catch (e) {
    await abandon();
    await bus?.close();
    await store?.close();
    throw e;
  }
  const [platformStore, platformBus] = [store, bus];

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop accepting, end long streams, let in-flight requests finish, then close what they use.
      shutdown.abort();
      await Promise.all(running.map((r) => r.server.stop(false)));
      // Reverse start order: a service stops before the ones it was started after (and may be using).
      for (const r of [...running].reverse()) await r.service.stop?.();
      await platformBus.close();
      await platformStore.close();
      log.info('stopped');
    })());

  return { urls, bus: platformBus, stop };
}

/** Runs the platform until SIGTERM/SIGINT; a start-up failure prints one line and exits 1. */
export async function serve(): Promise<void> {
  const started = startPlatform(process.env);
  // Handlers before start-up ends: a service's start() may already announce itself (the dev token),
  // and a signal that follows at once must still drain and exit 0.
  const onSignal = (sig: string) => {
    process.stderr.write(`${sig} received, shutting down\n`);
    started.then((platform) => platform.stop()).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  try {
    await started;
  } catch (e) {
    // One line, naming the variable when the configuration is at fault.
    const msg = e instanceof ConfigError ? `invalid configuration: ${e.message}` : `start-up failed: ${(e as Error).message}`;
    process.stderr.write(msg + '\n');
    process.exit(1);
  }
}

if (import.meta.main) await serve();
