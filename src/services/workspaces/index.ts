// Composition root of the workspaces service: engine, lifecycle, logs and exec behind one Elysia app
// with the envelope error model, workspace auth and rate limits, OpenAPI and health probes.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Elysia } from 'elysia';
import { errorHandling } from '../../platform/http/errors';
import { healthRoutes } from '../../platform/http/health';
import { openapiDocs } from '../../platform/http/openapi';
import { createSse } from '../../platform/http/sse';
import { workspaceAuth } from '../../platform/http/workspace-auth';
import { newId, errorFields } from '../../platform/runtime';
import type { Service, ServiceDeps } from '../../platform/service';
import { createAccess } from './access';
import { createEngine } from './engine/docker';
import { createExecService } from './exec/exec.service';
import { execRoutes } from './exec/exec.routes';
import { createLogHub } from './logs/logs.hub';
import { createLogsService } from './logs/logs.service';
import { logsRoutes } from './logs/logs.routes';
import { loadLogsExecConfig } from './logs/logs.config';
import { loadWorkspacesConfig } from './workspaces.config';
import { workspacesRoutes } from './lifecycle/lifecycle.routes';
import { createLifecycle, type Lifecycle } from './lifecycle/lifecycle.service';
import { createWebhooks } from './webhooks/webhooks.feature';
import { loadWebhooksConfig } from './webhooks/webhooks.config';

/** This Keel's identity on the engine, kept in the data dir so a restart recognizes its containers. */
function instanceId(dataDir: string): string {
  const file = join(dataDir, 'workspaces-instance');
  if (existsSync(file)) {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[a-z0-9_]+$/.test(id)) return id;
  }
  const id = newId('keel');
  writeFileSync(file, id + '\n', { mode: 0o600 });
  return id;
}

export function createWorkspacesService(deps: ServiceDeps): Service & { workspaces: Lifecycle } {
  const settings = loadWorkspacesConfig(deps.config.env);
  const engine = createEngine(deps.config.dockerHost);
  const access = createAccess(deps.db);
  const workspaces = createLifecycle({
    db: deps.db,
    bus: deps.bus,
    log: deps.log,
    clock: deps.clock,
    config: deps.config,
    settings,
    engine,
    access,
    instance: instanceId(deps.config.dataDir),
  });
  const lxSettings = loadLogsExecConfig(deps.config.env);
  const hub = createLogHub({ engine, log: deps.log, clock: deps.clock, workspaces: access });
  const logs = createLogsService({ engine, hub, workspaces: access });
  const exec = createExecService({ engine, workspaces: access });
  const sse = createSse({ shutdown: deps.shutdown, heartbeatMs: lxSettings.heartbeatMs, log: deps.log });
  const webhooks = createWebhooks(deps, loadWebhooksConfig(deps.config.env));
  const auth = workspaceAuth({
    secret: deps.config.apiSecret,
    anonymousLimit: settings.anonymousLimit,
    authenticatedLimit: settings.authenticatedLimit,
  });

  const app = new Elysia()
    .use(errorHandling('envelope', { production: deps.config.production, log: deps.log }))
    .use(
      openapiDocs({
        title: 'Keel workspace API',
        component: 'workspaces',
        description:
          'Containerized development workspaces on a Docker engine: lifecycle, logs and command execution. ' +
          'Every /api route needs `Authorization: Bearer <JWT>` (HS256, APP_API_SECRET). Errors are `{ error: { code, message, details } }`. ' +
          'Responses carry X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset; past the limit: 429 RATE_LIMITED with Retry-After.',
        tags: [
          { name: 'workspaces', description: 'Workspace lifecycle' },
          { name: 'logs', description: 'Workspace logs' },
          { name: 'exec', description: 'Commands in a workspace' },
          { name: 'webhooks', description: 'Signed, ordered, retried deliveries of workspace events' },
          { name: 'probes', description: 'Health and version' },
        ],
      }),
    )
    .use(healthRoutes('workspaces'))
    .use(auth)
    .use(workspacesRoutes({ auth, workspaces }))
    .use(logsRoutes({ auth, logs, exec, sse }))
    .use(execRoutes({ auth, exec, sse }))
    .use(webhooks.routes(auth));

  return {
    app,
    workspaces,
    async start() {
      // Engine trouble at start-up is logged, not fatal: the API still answers and the event watcher retries.
      // Subscribed before reconciliation, so the events it publishes become deliveries.
      webhooks.start();
      await workspaces.startUp().catch((e) => deps.log.warn('start-up reconciliation failed', errorFields(e)));
    },
    async stop() {
      hub.closeAll();
      await workspaces.close();
      await webhooks.stop();
    },
  };
}
