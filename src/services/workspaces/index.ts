// Composition root of the workspaces service: builds the service objects (engine, templates, lifecycle,
// logs, exec, agent sessions, webhooks, the event stream) and the one Elysia app over them, with the
// envelope error model, workspace auth and rate limits, OpenAPI and health probes, and the dashboard
// (GET /ui). start() subscribes to the bus, announces the engine and the dev token, and reconciles.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createResponseCache } from '../../platform/http/response-cache';
import { createServiceApp } from '../../platform/http/service-app';
import { createSse } from '../../platform/http/sse';
import { workspaceAuth } from '../../platform/http/workspace-auth';
import { mintToken } from '../../platform/auth/workspace-token';
import { newId, errorFields, type Clock } from '../../platform/runtime';
import { ConfigError, type Env } from '../../platform/config';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createAccess } from './access';
import { workspaceErrors } from './workspaces.errors';
import * as lifecycleModels from './lifecycle/lifecycle.model';
import * as snapshotsModels from './lifecycle/snapshots.model';
import * as logsModels from './logs/logs.model';
import * as execModels from './exec/exec.model';
import * as filesModels from './files/files.model';
import * as processesModels from './processes/processes.model';
import * as previewsModels from './previews/previews.model';
import * as terminalsModels from './terminals/terminals.model';
import * as agentModels from './agent/agent.model';
import * as usageModels from './usage/usage.model';
import * as webhooksModels from './webhooks/webhooks.model';
import * as eventsModels from './events/events.model';
import * as volumesModels from './volumes/volumes.model';
import * as templatesModels from './images/templates.model';
import { createQuotas } from './quotas';
import { createTargetGuard } from './targets';
import { createEngine } from './engine/docker';
import { createEngines, type Engines } from './engine/engines';
import type { Engine } from './engine/engine';
import { createTemplateRegistry } from './images/templates';
import { createTemplatesService } from './images/templates.service';
import { templatesRoutes } from './images/templates.routes';
import * as customTemplatesModels from './templates/templates.model';
import { createTemplatesRepository } from './templates/templates.repository';
import { customTemplatesRoutes, streamedTemplateBody } from './templates/templates.routes';
import { createCustomTemplates } from './templates/templates.service';
import { createWorkspaceEvents } from './events/events.service';
import { eventsRoutes } from './events/events.routes';
import { uiAssets } from './ui/ui.assets';
import { uiRoutes } from './ui/ui.routes';
import { createFilesService } from './files/files.service';
import { filesRoutes, streamedFileUpload } from './files/files.routes';
import { createProcessesService } from './processes/processes.service';
import { processesRoutes, streamedStdin } from './processes/processes.routes';
import { createPreviewsService } from './previews/previews.service';
import { createPreviewProxy } from './previews/previews.proxy';
import { createPreviewRelays } from './previews/previews.relays';
import { createPreviewTargets } from './previews/previews.targets';
import { previewsRoutes } from './previews/previews.routes';
import { createTerminalsService } from './terminals/terminals.service';
import { terminalAttachRoute, terminalsRoutes, ticketAuthorised } from './terminals/terminals.routes';
import { createExecService } from './exec/exec.service';
import { execRoutes } from './exec/exec.routes';
import { createLogHub } from './logs/logs.hub';
import { createLogsService } from './logs/logs.service';
import { logsRoutes } from './logs/logs.routes';
import { loadStreamsConfig, type StreamsConfig } from './streams.config';
import { loadWorkspacesConfig, type EngineSettings, type WorkspacesConfig } from './workspaces.config';
import { workspacesRoutes } from './lifecycle/lifecycle.routes';
import { snapshotsRoutes } from './lifecycle/snapshots.routes';
import { createLifecycle, type Lifecycle } from './lifecycle/lifecycle.service';
import { listScope } from './lifecycle/views';
import { loadCodeKey } from './lifecycle/code-secret';
import { createVolumes } from './volumes/volumes.service';
import { volumesRoutes } from './volumes/volumes.routes';
import { createDeliverer } from './webhooks/deliver';
import { createOutbox } from './webhooks/outbox';
import { webhooksRoutes } from './webhooks/webhooks.routes';
import { createWebhooksService } from './webhooks/webhooks.service';
import { createWebhooksRepository } from './webhooks/webhooks.repository';
import type { TargetPolicy } from '../../platform/net/address-policy';
import { loadWebhooksConfig, type WebhooksConfig } from './webhooks/webhooks.config';
import { loadAgentConfig, type AgentConfig } from './agent/agent.config';
import { agentRoutes } from './agent/agent.routes';
import { createAgentService } from './agent/agent.service';
import { createAgentRepository } from './agent/agent.repository';
import { createUsage } from './usage/usage.service';
import { usageRoutes } from './usage/usage.routes';
import { mcpRoutes } from './mcp/mcp.routes';
import { createProviders } from './agent/providers/providers';

/** This Keel's identity on the engine, kept in the data dir so a restart recognizes its containers. */
function instanceId(dataDir: string, clock: Clock): string {
  const file = join(dataDir, 'workspaces-instance');
  if (existsSync(file)) {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[a-z0-9_]+$/.test(id)) return id;
  }
  const id = newId('keel', clock);
  writeFileSync(file, id + '\n', { mode: 0o600 });
  return id;
}

interface Settings {
  settings: WorkspacesConfig;
  streamSettings: StreamsConfig;
  webhooksSettings: WebhooksConfig;
  agentSettings: AgentConfig;
}

const loadSettings = (env: Env): Settings => ({
  settings: loadWorkspacesConfig(env),
  streamSettings: loadStreamsConfig(env),
  webhooksSettings: loadWebhooksConfig(env),
  agentSettings: loadAgentConfig(env),
});

/**
 * What the workspaces service is given: the platform's dependencies and, optionally, how it reaches
 * an engine (by default Docker at each APP_ENGINES host; tests/service passes an in-memory one).
 */
export interface WorkspacesDeps extends ServiceDeps {
  connectEngine?: (engine: EngineSettings) => Engine;
}

export function createWorkspacesService(deps: WorkspacesDeps, { settings, streamSettings, webhooksSettings, agentSettings }: Settings): Service & { workspaces: Lifecycle } {
  // Access asks whether a workspace's engine answers (503 ENGINE_UNAVAILABLE); the engines ask access
  // where a workspace, container or volume lives: each reads the other once both exist.
  let engines: Engines | undefined;
  // Every API call on a workspace (exec, logs and agent turns included) resets its idle countdown.
  const access = createAccess(deps.store, { engineReady: (row) => void engines?.requireUp(row.engine), used: (id) => workspaces.touch(id) });
  engines = createEngines({
    settings: settings.engines,
    connect: deps.connectEngine ?? ((e) => createEngine(e.host, { certPath: e.certPath })),
    locate: {
      workspace: async (id) => (await access.row(id))?.engine ?? workspaces.pooledEngine(id),
      container: access.engineOfContainer,
      volume: access.engineOfVolume,
      load: (name) => workspaces.placementLoad(name),
    },
    log: deps.log.child({ component: 'engines' }),
    checkSeconds: settings.engineCheckSeconds,
  });
  const engine = engines.routed;
  const quotas = createQuotas({ store: deps.store, limits: settings.quotas });
  // Clones and webhooks never reach the workspace networks or any workspace container (targets.ts).
  // Keel's own ports: every service's configured one, and this app's as bound (`0` picks one at listen).
  const ownPorts = () => [...Object.values(deps.config.ports).filter((p) => p > 0), ...(app.server?.port ? [app.server.port] : [])];
  const targets = createTargetGuard({ engine, subnetPool: settings.subnetPool, log: deps.log, ownPorts });
  const agentRepository = createAgentRepository(deps.store);
  const usage = createUsage({ store: deps.store, clock: deps.clock, tokensByModel: (actor, from, to) => agentRepository.tokensByModel(actor, from, to) });
  const registry = createTemplateRegistry();
  const instance = instanceId(deps.config.dataDir, deps.clock);
  const customTemplates = createCustomTemplates({
    repo: createTemplatesRepository(deps.store),
    registry,
    engine,
    settings,
    clock: deps.clock,
    log: deps.log.child({ component: 'templates' }),
    // Late-bound: the lifecycle is built next; it is asked only once the service started.
    inUse: (names) => workspaces.templatesInUse(names),
  });
  const templates = createTemplatesService({ registry, engine, settings, log: deps.log, custom: customTemplates });
  const workspaces = createLifecycle({
    store: deps.store,
    bus: deps.bus,
    log: deps.log,
    clock: deps.clock,
    settings,
    engine,
    engines,
    access,
    quotas,
    templates: registry,
    resolveTemplate: customTemplates.resolve,
    publicTemplate: customTemplates.publicVersion,
    instance,
    snapshotDir: join(deps.config.dataDir, 'snapshots'),
    codeKey: loadCodeKey(deps.config.dataDir),
    cloneDeny: targets.deny,
    onEvent: usage.onWorkspaceEvent,
  });
  const hub = createLogHub({ engine, log: deps.log, clock: deps.clock });
  const logs = createLogsService({ engine, hub, access });
  const exec = createExecService({ engine, access, onExecEnd: usage.recordExec });
  const files = createFilesService({ engine, access, maxBytes: settings.fileMaxBytes, readMaxBytes: settings.toolReadMaxBytes });
  const processes = createProcessesService({ store: deps.store, engine, access, clock: deps.clock, settings: settings.processes });
  // Previews are a second listener of this service (not a service of their own): links, activity and
  // the proxy all need the workspace rows and the engine, which only this service owns.
  // Each preview is a host of its own: APP_PREVIEW_PUBLIC_URL's form, else <label>.<APP_PREVIEW_DOMAIN> on the listener's port.
  let previewPort = settings.previewPort;
  const previewUrl = (label: string) => settings.previewPublicUrl?.replace('{label}', label) ?? `http://${label}.${settings.previewDomain}:${previewPort}/`;
  const previewRelays = createPreviewRelays({ clock: deps.clock });
  const previewTargets = createPreviewTargets({ access, engine, clock: deps.clock });
  const previews = createPreviewsService({
    store: deps.store,
    clock: deps.clock,
    access,
    urlOf: previewUrl,
    onActivity: (id) => workspaces.touch(id),
    onRevoked: (id) => previewRelays.revoked(id),
  });
  const terminals = createTerminalsService({ engine, access, quotas, clock: deps.clock, onActivity: (id) => workspaces.touch(id) });
  const previewProxy = createPreviewProxy({
    previews,
    targets: previewTargets,
    relays: previewRelays,
    clock: deps.clock,
    log: deps.log,
    proto: settings.previewPublicUrl?.startsWith('https:') ? 'https' : 'http',
  });
  const volumes = createVolumes({ store: deps.store, engine });
  const events = createWorkspaceEvents({ clock: deps.clock });
  const sse = createSse({ shutdown: deps.shutdown, heartbeatMs: streamSettings.heartbeatMs, log: deps.log });
  const webhooksLog = deps.log.child({ component: 'webhooks' });
  // Webhook targets: the platform's rules, plus the workspace networks and Keel's own ports (targets.ts).
  const policy: TargetPolicy = { denyPrivate: webhooksSettings.denyPrivate, deny: targets.deny };
  const webhooksRepository = createWebhooksRepository(deps.store);
  const outbox = createOutbox({
    store: deps.store,
    repository: webhooksRepository,
    clock: deps.clock,
    log: webhooksLog,
    config: webhooksSettings,
    deliverer: createDeliverer({ policy, timeoutMs: webhooksSettings.timeoutMs }),
  });
  const webhooks = createWebhooksService({ repository: webhooksRepository, clock: deps.clock, log: webhooksLog, config: webhooksSettings, outbox, policy });
  const agent = createAgentService({
    repository: agentRepository,
    providers: createProviders(agentSettings.providers),
    shell: exec,
    files,
    takeExecSlot: (actor) => quotas.take(actor, 'execs'),
    access,
    config: agentSettings,
    clock: deps.clock,
    log: deps.log.child({ feature: 'agent' }),
    shutdown: deps.shutdown,
    mcpPolicy: policy,
  });
  // The list's serialised answers per actor and filter, until the next write (docs/performance.md);
  // a repeated list request is answered from the auth hook, before routing (`early`).
  const lists = createResponseCache({ version: deps.store.version, cacheControl: 'private, no-cache', vary: 'Authorization' });
  const auth = workspaceAuth({
    seed: 'workspaces',
    early: (request, actor, headers) => lists.early(request, listScope(actor), headers),
    ownAuth: ticketAuthorised,
    clock: deps.clock,
    secret: deps.config.apiSecret,
    anonymousLimit: settings.anonymousLimit,
    authenticatedLimit: settings.authenticatedLimit,
  });

  const app = createServiceApp(deps, {
    name: 'workspaces',
    style: 'envelope',
    errors: workspaceErrors,
    models: [lifecycleModels, snapshotsModels, logsModels, execModels, filesModels, processesModels, terminalsModels, previewsModels, agentModels, webhooksModels, eventsModels, volumesModels, templatesModels, customTemplatesModels, usageModels],
    title: 'Keel workspace API',
    description:
      'Containerized development workspaces on a Docker engine: lifecycle, logs, command execution and agent sessions. ' +
      'Every /api route needs `Authorization: Bearer <JWT>` (HS256, APP_API_SECRET). Errors are `{ error: { code, message, details } }`. ' +
      'Responses carry X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset; past the limit: 429 RATE_LIMITED with Retry-After.',
    tags: [
      { name: 'workspaces', description: 'Workspace lifecycle' },
      { name: 'logs', description: 'Workspace logs' },
      { name: 'exec', description: 'Commands in a workspace' },
      { name: 'files', description: "A workspace's files, streamed both ways" },
      { name: 'processes', description: 'Commands that outlive their request: output kept and followed, stdin, signals' },
      { name: 'terminals', description: 'Terminals (PTYs) in a workspace over a WebSocket, with tickets and reattach' },
      { name: 'previews', description: "Links to a workspace's ports, each on a host name of its own, served by Keel on APP_PREVIEW_PORT" },
      { name: 'agent', description: 'Agent sessions that act in their workspace' },
      { name: 'usage', description: 'What each actor spent: tokens, command time, running time' },
      { name: 'mcp', description: 'Keel as a Model Context Protocol server' },
      { name: 'webhooks', description: 'Signed, ordered, retried deliveries of workspace events' },
      { name: 'events', description: 'Workspace events, live' },
      { name: 'volumes', description: 'Volumes kept by deletes, counted against APP_QUOTA_VOLUMES' },
      { name: 'snapshots', description: 'Snapshots of workspaces (file system and volume) and forks, counted against APP_QUOTA_SNAPSHOTS' },
    ],
    streamedBodies: (request) => streamedFileUpload(request) || streamedStdin(request) || streamedTemplateBody(request),
  })
    .use(uiRoutes({ assets: uiAssets }))
    .use(terminalAttachRoute({ terminals }))
    .use(auth)
    .use(workspacesRoutes({ auth, workspaces, lists }))
    .use(snapshotsRoutes({ auth, workspaces }))
    .use(templatesRoutes({ auth, templates }))
    .use(customTemplatesRoutes({ auth, templates: customTemplates, sse, quotas, contextBytes: settings.templates.contextBytes, snapshotSource: workspaces.snapshots.source }))
    .use(volumesRoutes({ auth, volumes }))
    .use(logsRoutes({ auth, logs, exec, sse, quotas }))
    .use(execRoutes({ auth, exec, sse, quotas }))
    .use(filesRoutes({ auth, files }))
    .use(processesRoutes({ auth, processes, sse, quotas }))
    .use(terminalsRoutes({ auth, terminals }))
    .use(previewsRoutes({ auth, previews }))
    .use(agentRoutes({ auth, agent, config: agentSettings, sse, quotas }))
    .use(usageRoutes({ auth, usage }))
    .use(mcpRoutes({ auth, workspaces, exec, quotas, files, processes, previews, templates }))
    .use(webhooksRoutes({ auth, webhooks }))
    .use(eventsRoutes({ auth, events, sse, quotas }));

  /** Start-up lines on stdout, as an operator reads them (scripts/dev.ts says where the engine came from). */
  function announce() {
    if (settings.announce.engine) {
      const several = settings.engines.length > 1 ? settings.engines.map((e) => `${e.name}=${e.host}`).join(', ') : null;
      process.stdout.write(several ? `Engines: ${several} (APP_ENGINES)\n` : `Engine: ${settings.dockerHost ?? 'unix:///var/run/docker.sock'} (${settings.announce.engineOrigin})\n`);
    }
    if (settings.announce.token && deps.config.apiSecretGenerated) {
      // The token alone on its line, so `tail -1` or a script can take it as is.
      const token = mintToken(deps.config.apiSecret, { sub: 'admin', role: 'admin', ttlSeconds: 24 * 3600 });
      process.stdout.write(`Dev admin token (24 h), on the next line:\n${token}\n`);
    }
  }

  const unsubscribe: (() => void)[] = [];
  return {
    app,
    workspaces,
    async start() {
      // Subscriptions before the first await: main.ts calls start() right after the app listens, so no
      // event of a request is missed (webhook deliveries, the event stream's ring).
      unsubscribe.push(events.listen(deps.bus));
      // The log hub learns from the workspaces' events when a stopped container runs again.
      unsubscribe.push(hub.listen(deps.bus));
      // A preview's target is looked up again when its workspace starts, stops or goes.
      unsubscribe.push(previewTargets.listen(deps.bus));
      // A workspace gone may leave a template version's image that nobody gets any more.
      unsubscribe.push(deps.bus.subscribe<'evt.workspace.deleted'>('evt.workspace.deleted', () => void customTemplates.collect()));
      // A public template's new version (or its delete) replaces the warm entries APP_WARM_POOL keeps of it.
      unsubscribe.push(customTemplates.onPublicChange(() => void workspaces.refreshPool().catch((e) => deps.log.warn('warm pool not refreshed', errorFields(e)))));
      outbox.listen(deps.bus); // outbox.stop() unsubscribes
      // One workspaces process per database: its containers, queues and streams live in the process.
      if (!(await deps.store.claim('keel-workspaces-service'))) {
        throw new ConfigError('APP_DATABASE_URL', 'another Keel process runs the workspaces service on this database; run one per database (docs/operations.md)');
      }
      announce();
      // Processes a previous run followed are no longer followed: visibly lost, never "running".
      const lost = await processes.markLost();
      if (lost) deps.log.info('processes of a previous run marked lost', { count: lost });
      previewPort = previewProxy.listen(deps.config.host, settings.previewPort);
      deps.log.info('preview listener', { url: `http://${deps.config.host}:${previewPort}`, example: previewUrl('<label>') });
      await agent.recover();
      // Built template versions join the registry before workspaces start from them; unfinished builds run again.
      await customTemplates.start().catch((e) => deps.log.warn('templates not loaded', errorFields(e)));
      targets.start();
      // Deliveries a previous run left pending go out again.
      await outbox.start();
      // Engine trouble at start-up is logged, not fatal: the API still answers and the event watcher retries.
      await workspaces.startUp().catch((e) => deps.log.warn('start-up reconciliation failed', errorFields(e)));
      // Images of template versions no one gets any more (a crash may have cut a collection short).
      void customTemplates.collect();
    },
    async stop() {
      hub.closeAll();
      processes.close();
      terminals.close();
      previewProxy.stop();
      await agent.close();
      for (const off of unsubscribe.splice(0)) off();
      await workspaces.close();
      await outbox.stop();
      targets.stop();
    },
  };
}

export const workspacesService = defineService({ loadConfig: loadSettings, create: createWorkspacesService });
