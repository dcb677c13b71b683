// Composition root of the workspaces service: engine, lifecycle, logs, exec and agent sessions behind one Elysia app
// with the envelope error model, workspace auth and rate limits, OpenAPI and health probes; the
// workspace event stream (GET /api/events) and the dashboard (GET /ui).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dbVersion } from '../../platform/db-version';
import { createResponseCache } from '../../platform/http/response-cache';
import { createServiceApp } from '../../platform/http/service-app';
import { createSse } from '../../platform/http/sse';
import { workspaceAuth } from '../../platform/http/workspace-auth';
import { newId, errorFields } from '../../platform/runtime';
import type { Env } from '../../platform/config';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createAccess } from './access';
import { workspaceErrors } from './workspaces.errors';
import * as lifecycleModels from './lifecycle/lifecycle.model';
import * as logsModels from './logs/logs.model';
import * as execModels from './exec/exec.model';
import * as agentModels from './agent/agent.model';
import * as webhooksModels from './webhooks/webhooks.model';
import * as eventsModels from './events/events.model';
import { createQuotas } from './quotas';
import { createEngine } from './engine/docker';
import { createWorkspaceEvents } from './events/events.service';
import { eventsRoutes } from './events/events.routes';
import { uiAssets } from './ui/ui.assets';
import { uiRoutes } from './ui/ui.routes';
import { createExecService } from './exec/exec.service';
import { execRoutes } from './exec/exec.routes';
import { createLogHub } from './logs/logs.hub';
import { createLogsService } from './logs/logs.service';
import { logsRoutes } from './logs/logs.routes';
import { loadLogsExecConfig, type LogsExecConfig } from './logs/logs.config';
import { loadWorkspacesConfig, type WorkspacesConfig } from './workspaces.config';
import { workspacesRoutes } from './lifecycle/lifecycle.routes';
import { createLifecycle, type Lifecycle } from './lifecycle/lifecycle.service';
import { listScope } from './lifecycle/views';
import { loadCodeKey } from './lifecycle/code-secret';
import { createWebhooks } from './webhooks/webhooks.feature';
import { loadWebhooksConfig, type WebhooksConfig } from './webhooks/webhooks.config';
import { loadAgentConfig, type AgentConfig } from './agent/agent.config';
import { agentRoutes } from './agent/agent.routes';
import { createAgentService } from './agent/agent.service';
import { createAgentStore } from './agent/agent.store';
import { createProviders } from './agent/providers/providers';

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

interface Settings {
  settings: WorkspacesConfig;
  lxSettings: LogsExecConfig;
  webhooksSettings: WebhooksConfig;
  agentSettings: AgentConfig;
}

const loadSettings = (env: Env): Settings => ({
  settings: loadWorkspacesConfig(env),
  lxSettings: loadLogsExecConfig(env),
  webhooksSettings: loadWebhooksConfig(env),
  agentSettings: loadAgentConfig(env),
});

export function createWorkspacesService(deps: ServiceDeps, { settings, lxSettings, webhooksSettings, agentSettings }: Settings): Service & { workspaces: Lifecycle } {
  const engine = createEngine(settings.dockerHost);
  const access = createAccess(deps.db);
  const quotas = createQuotas({ db: deps.db, limits: settings.quotas });
  const workspaces = createLifecycle({
    db: deps.db,
    bus: deps.bus,
    log: deps.log,
    clock: deps.clock,
    settings,
    engine,
    access,
    quotas,
    instance: instanceId(deps.config.dataDir),
    codeKey: loadCodeKey(deps.config.dataDir),
  });
  const hub = createLogHub({ engine, log: deps.log, clock: deps.clock, workspaces: access });
  const logs = createLogsService({ engine, hub, workspaces: access });
  const exec = createExecService({ engine, workspaces: access });
  const events = createWorkspaceEvents({ bus: deps.bus, clock: deps.clock });
  const sse = createSse({ shutdown: deps.shutdown, heartbeatMs: lxSettings.heartbeatMs, log: deps.log });
  const webhooks = createWebhooks(deps, webhooksSettings);
  const agent = createAgentService({
    store: createAgentStore(deps.db),
    providers: createProviders(agentSettings.providers),
    shell: exec,
    workspaces: access,
    config: agentSettings,
    clock: deps.clock,
    log: deps.log.child({ feature: 'agent' }),
    shutdown: deps.shutdown,
  });
  // The list's serialised answers per actor and filter, until the next write (docs/performance.md);
  // a repeated list request is answered from the auth hook, before routing (`early`).
  const lists = createResponseCache({ version: dbVersion(deps.db.$client), cacheControl: 'private, no-cache', vary: 'Authorization' });
  const auth = workspaceAuth({
    seed: 'workspaces',
    early: (request, actor, headers) => lists.early(request, listScope(actor), headers),
    clock: deps.clock,
    secret: deps.config.apiSecret,
    anonymousLimit: settings.anonymousLimit,
    authenticatedLimit: settings.authenticatedLimit,
  });

  const app = createServiceApp(deps, {
    name: 'workspaces',
    style: 'envelope',
    errors: workspaceErrors,
    models: [lifecycleModels, logsModels, execModels, agentModels, webhooksModels, eventsModels],
    title: 'Keel workspace API',
    description:
      'Containerized development workspaces on a Docker engine: lifecycle, logs, command execution and agent sessions. ' +
      'Every /api route needs `Authorization: Bearer <JWT>` (HS256, APP_API_SECRET). Errors are `{ error: { code, message, details } }`. ' +
      'Responses carry X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset; past the limit: 429 RATE_LIMITED with Retry-After.',
    tags: [
      { name: 'workspaces', description: 'Workspace lifecycle' },
      { name: 'logs', description: 'Workspace logs' },
      { name: 'exec', description: 'Commands in a workspace' },
      { name: 'agent', description: 'Agent sessions that act in their workspace' },
      { name: 'webhooks', description: 'Signed, ordered, retried deliveries of workspace events' },
      { name: 'events', description: 'Workspace events, live' },
    ],
  })
    .use(uiRoutes({ assets: uiAssets }))
    .use(auth)
    .use(workspacesRoutes({ auth, workspaces, lists }))
    .use(logsRoutes({ auth, logs, exec, sse, quotas }))
    .use(execRoutes({ auth, exec, sse, quotas }))
    .use(agentRoutes({ auth, agent, config: agentSettings, sse, quotas }))
    .use(webhooks.routes(auth))
    .use(eventsRoutes({ auth, events, sse, quotas }));

  return {
    app,
    workspaces,
    async start() {
      // Engine trouble at start-up is logged, not fatal: the API still answers and the event watcher retries.
      agent.recover();
      // Deliveries a previous run left pending go out again (events became deliveries from creation on).
      webhooks.start();
      await workspaces.startUp().catch((e) => deps.log.warn('start-up reconciliation failed', errorFields(e)));
    },
    async stop() {
      hub.closeAll();
      await agent.close();
      events.close();
      await workspaces.close();
      await webhooks.stop();
    },
  };
}

export const workspacesService = defineService({ loadConfig: loadSettings, create: createWorkspacesService });
