// One service's app for tests/service: built as main.ts builds it, on a temporary SQLite file, the
// in-memory bus and (workspaces) the in-memory engine of tests/helpers/memory-engine.ts, and called
// with `app.handle(new Request(...))`: no port, no Docker, no NATS, no PostgreSQL. What needs the real
// parts (containers, exec, the JetStream bus, PostgreSQL) stays in the other folders of tests/.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type ServiceName } from '../../src/platform/config';
import { openDb } from '../../src/platform/db';
import { sqliteStore } from '../../src/platform/store';
import { createMemoryBus } from '../../src/platform/bus/memory';
import type { Bus } from '../../src/platform/bus/bus';
import { createLogger, systemClock, type Clock } from '../../src/platform/runtime';
import type { Service, ServiceDeps } from '../../src/platform/service';
import { identityService } from '../../src/services/identity';
import { createWorkspacesService, workspacesService } from '../../src/services/workspaces';
import { loadWorkspacesConfig } from '../../src/services/workspaces/workspaces.config';
import { createMemoryEngine, type MemoryEngine } from './memory-engine';
import { TEST_SECRET, testToken } from './platform';

export interface ServiceApp {
  service: Service;
  bus: Bus;
  dataDir: string;
  /** The workspaces service's engine (with the built-in templates' images); absent for identity. */
  engine?: MemoryEngine;
  /** `app.handle` of `path` with a Bearer token for `as` (default alice, `admin` has the admin role; null: none); `json` is sent as the body. */
  api(path: string, init?: RequestInit & { as?: string | null; json?: unknown }): Promise<Response>;
  /** Stops the service's background work, closes the database and removes the data dir. */
  close(): Promise<void>;
}

type Tested = Extract<ServiceName, 'workspaces' | 'identity'>;

/**
 * `name`'s app with `env` over the defaults (NODE_ENV=test, the test secret, every port free) and
 * its background work started (the outbox's dispatcher, the agent's turns, identity's key rotation).
 */
export async function startServiceApp(name: Tested, opts: { env?: Record<string, string>; clock?: Clock } = {}): Promise<ServiceApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-service-'));
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    APP_DATA_DIR: dataDir,
    APP_API_SECRET: TEST_SECRET,
    APP_SERVICES: name,
    APP_BUS: 'memory',
    APP_LOG_LEVEL: 'error',
    APP_PREVIEW_PORT: '0',
    APP_WORKSPACE_FIREWALL: 'off',
    APP_WORKSPACE_PORT_RANGE: '20000-20089',
    ...opts.env,
  };
  const config = loadConfig(env);
  const log = createLogger({ app: 'keel' }, config.logLevel);
  const db = openDb(dataDir);
  const store = sqliteStore(db);
  const bus = createMemoryBus(log.child({ component: 'bus' }));
  const shutdown = new AbortController();
  const deps: ServiceDeps = { config, store, bus, log: log.child({ service: name }), clock: opts.clock ?? systemClock, shutdown: shutdown.signal };

  let engine: MemoryEngine | undefined;
  let service: Service;
  if (name === 'workspaces') {
    const settings = loadWorkspacesConfig(env);
    const memory = (engine = createMemoryEngine({ images: [settings.minimalImage, settings.bunImage] }));
    service = createWorkspacesService({ ...deps, connectEngine: () => memory }, workspacesService.loadConfig(env));
  } else {
    service = await identityService.create(deps, identityService.loadConfig(env));
  }
  await service.start?.();

  return {
    service,
    bus,
    dataDir,
    engine,
    api(path, init = {}) {
      const { as = 'alice', json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (as !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${testToken(as, as === 'admin' ? { role: 'admin' } : {})}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return service.app.handle(new Request(`http://localhost${path}`, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body }));
    },
    async close() {
      shutdown.abort();
      await service.stop?.();
      await bus.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
