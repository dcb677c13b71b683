// Start-up: config -> database + migrations -> bus -> services -> listen. SIGTERM/SIGINT -> drain and stop.
import { loadConfig, ConfigError, type Config, type ServiceName } from './platform/config';
import { openDb } from './platform/db';
import { openPostgresStore, sqliteStore, type Store } from './platform/store';
import { openBus, type Bus } from './platform/bus';
import { MAX_BODY_BYTES } from './platform/http/errors';
import { createLogger, systemClock } from './platform/runtime';
import type { Service, ServiceDefinition, ServiceDeps } from './platform/service';
import { workspacesService } from './services/workspaces';
import { catalogService } from './services/catalog';
import { sourcesService } from './services/sources';
import { workersService } from './services/workers';
import { identityService } from './services/identity';
import { playbackService } from './services/playback';

const definitions: Record<ServiceName, ServiceDefinition<any>> = {
  identity: identityService,
  workspaces: workspacesService,
  catalog: catalogService,
  sources: sourcesService,
  workers: workersService,
  playback: playbackService,
};

export interface Platform {
  urls: Partial<Record<ServiceName, string>>;
  /** The platform's bus, so tests can attach a component (a guarded app, a subscriber) to it. */
  bus: Bus;
  stop(): Promise<void>;
}

/** PostgreSQL when APP_DATABASE_URL names one, else the SQLite file of the data dir. */
async function openStore(config: Config): Promise<Store> {
  if (!config.databaseUrl) return sqliteStore(openDb(config.dataDir));
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
  // Every named service's own variables, before anything opens: a bad one stops start-up here.
  const serviceConfigs = new Map(config.services.map((name) => [name, definitions[name].loadConfig(env)]));
  const store = await openStore(config);
  const bus = await openBus(config.bus, log.child({ component: 'bus' }), { maxDeliver: config.busMaxDeliver }).catch(async (e) => {
    await store.close();
    throw e;
  });
  const shutdown = new AbortController();
  const urls: Platform['urls'] = {};
  const deps: ServiceDeps = { config, store, bus, log, clock: systemClock, shutdown: shutdown.signal, peers: urls };

  const running: { name: ServiceName; service: Service; server: { stop(force?: boolean): Promise<void> | void } }[] = [];
  try {
    for (const name of config.services) {
      const service = await definitions[name].create({ ...deps, log: log.child({ service: name }) }, serviceConfigs.get(name));
      service.app.listen({ hostname: config.host, port: config.ports[name], maxRequestBodySize: Math.max(MAX_BODY_BYTES, service.maxRequestBodySize ?? 0) + 1024 });
      const server = service.app.server!;
      urls[name] = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`;
      running.push({ name, service, server });
      await service.start?.();
      log.info('service listening', { service: name, url: urls[name] });
    }
  } catch (e) {
    for (const r of running) await r.server.stop(true);
    await bus.close();
    await store.close();
    throw e;
  }

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop accepting, end long streams, let in-flight requests finish, then close what they use.
      shutdown.abort();
      await Promise.all(running.map((r) => r.server.stop(false)));
      // Reverse start order: a service stops before the ones it was started after (and may be using).
      for (const r of [...running].reverse()) await r.service.stop?.();
      await bus.close();
      await store.close();
      log.info('stopped');
    })());

  return { urls, bus, stop };
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
