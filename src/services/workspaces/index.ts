// Composition root of the workspaces service: what the features share (the engines, access and
// activity, quotas, the target guard, auth, the SSE adapter), then the features, each built by its
// folder's create<Feature> (one shape: platform/feature.ts), then the one Elysia app over them with the
// envelope error model, workspace auth and rate limits, OpenAPI and health probes, and the dashboard
// (GET /ui). start() subscribes every feature, claims the database, announces the engine and the dev
// token, and starts the features in their order; stop() ends them.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createResponseCache } from '../../platform/http/response-cache';
import { createServiceApp } from '../../platform/http/service-app';
import { createSse } from '../../platform/http/sse';
import { workspaceAuth } from '../../platform/http/workspace-auth';
import { mintToken } from '../../platform/auth/workspace-token';
import { newId, type Clock } from '../../platform/runtime';
import { ConfigError, type Env } from '../../platform/config';
import { listenFeatures, mountFeatures, type Feature } from '../../platform/feature';
import type { TargetPolicy } from '../../platform/net/address-policy';
import { defineService, type Service, type ServiceDeps } from '../../platform/service';
import { createAccess } from './access';
import { createActivity } from './activity';
import { workspaceErrorTable } from './workspaces.errors';
import { createQuotas } from './quotas';
import { createTargetGuard } from './targets';
import { createEngine } from './engine/docker';
import { createEngines, type Engines } from './engine/engines';
import { keeldBinary, withDaemon } from './engine/with-daemon';
import type { Engine } from './engine/engine';
import { createTemplateRegistry } from './images/templates';
import { loadStreamsConfig, type StreamsConfig } from './streams.config';
import { loadWorkspacesConfig, type EngineSettings, type WorkspacesConfig } from './workspaces.config';
import { loadWebhooksConfig, type WebhooksConfig } from './webhooks/webhooks.config';
import { loadAgentConfig, type AgentConfig } from './agent/agent.config';
import { createAgentRepository } from './agent/agent.repository';
import { createProviders } from './agent/providers/providers';
import { loadCodeKey } from './lifecycle/code-secret';
import { listScope } from './lifecycle/views';
import type { Lifecycle } from './lifecycle/lifecycle.service';
import { streamedFileUpload } from './files/files.routes';
import { streamedStdin } from './processes/processes.routes';
import { streamedTemplateBody } from './templates/templates.routes';
import { ticketAuthorised } from './terminals/terminals.routes';
import { uiAssets } from './ui/ui.assets';
import { uiRoutes } from './ui/ui.routes';
import { createLifecycleFeature } from './lifecycle';
import { createSnapshotsFeature } from './snapshots';
import { createImagesFeature } from './images';
import { createTemplatesFeature } from './templates';
import { createVolumesFeature } from './volumes';
import { createLogsFeature } from './logs';
import { createExecFeature } from './exec';
import { createFilesFeature } from './files';
import { createProcessesFeature } from './processes';
import { createTerminalsFeature } from './terminals';
import { createPreviewsFeature } from './previews';
import { createAgentFeature } from './agent';
import { createUsageFeature } from './usage';
import { createMcpFeature } from './mcp';
import { createWebhooksFeature } from './webhooks';
import { createEventsFeature } from './events';

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
  const { store, clock, log } = deps;
  // What the features share. Access asks whether a workspace's engine answers (503 ENGINE_UNAVAILABLE);
  // the engines ask access where a workspace, container or volume lives: each reads the other once both
  // exist. Every API call on a workspace (exec, logs and agent turns included) is use (activity.ts).
  let engines: Engines | undefined;
  const activity = createActivity({ clock, log });
  const access = createAccess(store, { engineReady: (row) => void engines?.requireUp(row.engine), used: activity.touch });
  const codeKey = loadCodeKey(deps.config.dataDir);
  // Each engine's workspace processes start through keeld, the daemon in every container (engine/with-daemon.ts).
  const daemon = { binary: () => keeldBinary(settings.daemon), key: codeKey, log: log.child({ component: 'daemon' }) };
  engines = createEngines({
    settings: settings.engines,
    connect: deps.connectEngine ?? ((e) => withDaemon(createEngine(e.host, { certPath: e.certPath }), daemon)),
    locate: {
      workspace: async (id) => (await access.row(id))?.engine ?? lifecycle.service.pooledEngine(id),
      container: access.engineOfContainer,
      volume: access.engineOfVolume,
      load: (name) => lifecycle.service.placementLoad(name),
    },
    log: log.child({ component: 'engines' }),
    checkSeconds: settings.engineCheckSeconds,
  });
  const engine = engines.routed;
  const quotas = createQuotas({ store, limits: settings.quotas });
  // Clones and webhooks never reach the workspace networks or any workspace container (targets.ts).
  // Keel's own ports: every service's configured one, and this app's as bound (`0` picks one at listen).
  const ownPorts = () => [...Object.values(deps.config.ports).filter((p) => p > 0), ...(app.server?.port ? [app.server.port] : [])];
  const targets = createTargetGuard({ engine, subnetPool: settings.subnetPool, log, ownPorts });
  // Webhook targets and agents' MCP servers: the platform's rules, plus the workspace networks and Keel's own ports.
  const policy: TargetPolicy = { denyPrivate: webhooksSettings.denyPrivate, deny: targets.deny };
  const registry = createTemplateRegistry();
  const sse = createSse({ shutdown: deps.shutdown, heartbeatMs: streamSettings.heartbeatMs, log });
  // The list's serialised answers per actor and filter, until the next write (docs/performance.md);
  // a repeated list request is answered from the auth hook, before routing (`early`).
  const lists = createResponseCache({ version: store.version, cacheControl: 'private, no-cache', vary: 'Authorization' });
  const auth = workspaceAuth({
    seed: 'workspaces',
    early: (request, actor, headers) => lists.early(request, listScope(actor), headers),
    ownAuth: ticketAuthorised,
    clock,
    secret: deps.config.apiSecret,
    anonymousLimit: settings.anonymousLimit,
    authenticatedLimit: settings.authenticatedLimit,
  });
  const agentRepository = createAgentRepository(store);

  // The features, each given the service objects of those it uses.
  const usage = createUsageFeature({ store, clock, auth, tokensByModel: (actor, from, to) => agentRepository.tokensByModel(actor, from, to) });
  const templates = createTemplatesFeature({
    store,
    registry,
    engine,
    settings,
    clock,
    log: log.child({ component: 'templates' }),
    auth,
    sse,
    quotas,
    snapshotSource: (actor, id) => lifecycle.service.snapshots.source(actor, id),
  });
  const images = createImagesFeature({ registry, engine, settings, log, custom: templates.service, auth });
  const lifecycle = createLifecycleFeature({
    store,
    bus: deps.bus,
    log,
    clock,
    settings,
    engine,
    engines,
    access,
    activity,
    quotas,
    templates: registry,
    resolveTemplate: templates.service.resolve,
    publicTemplate: templates.service.publicVersion,
    instance: instanceId(deps.config.dataDir, clock),
    snapshotDir: join(deps.config.dataDir, 'snapshots'),
    codeKey,
    cloneDeny: targets.deny,
    onEvent: usage.service.onWorkspaceEvent,
    auth,
    lists,
    onPublicTemplateChange: (changed) => templates.service.onPublicChange(changed),
  });
  const workspaces = lifecycle.service;
  const snapshots = createSnapshotsFeature({ auth, workspaces });
  const volumes = createVolumesFeature({ store, engine, auth });
  const exec = createExecFeature({ engine, access, quotas, onExecEnd: usage.service.recordExec, auth, sse });
  const logs = createLogsFeature({ engine, access, quotas, clock, log, auth, exec: exec.service, sse });
  const files = createFilesFeature({ engine, access, maxBytes: settings.fileMaxBytes, readMaxBytes: settings.toolReadMaxBytes, auth });
  const processes = createProcessesFeature({ store, engine, access, quotas, clock, settings: settings.processes, auth, sse, log });
  const terminals = createTerminalsFeature({ engine, access, quotas, clock, onActivity: activity.touch, auth });
  const previews = createPreviewsFeature({ store, engine, access, clock, log, settings, host: deps.config.host, auth, onActivity: activity.touch });
  const agent = createAgentFeature({
    repository: agentRepository,
    providers: createProviders(agentSettings.providers),
    shell: exec.service,
    files: files.service,
    access,
    quotas,
    config: agentSettings,
    clock,
    log: log.child({ feature: 'agent' }),
    shutdown: deps.shutdown,
    mcpPolicy: policy,
    auth,
    sse,
  });
  const mcp = createMcpFeature({ auth, workspaces, exec: exec.service, files: files.service, processes: processes.service, previews: previews.service, templates: images.service });
  const webhooks = createWebhooksFeature({ store, clock, log: log.child({ component: 'webhooks' }), config: webhooksSettings, policy, auth });
  const events = createEventsFeature({ clock, quotas, auth, sse });

  /** Every feature, in the order of their routes (and of the OpenAPI document's paths). */
  const features: Feature[] = [lifecycle, snapshots, images, templates, volumes, logs, exec, files, processes, terminals, previews, agent, usage, mcp, webhooks, events];
  /**
   * Start-up order: template versions join the registry, and deliveries resume, before reconciliation
   * (the lifecycle, last) may start workspaces from them and publish their events.
   */
  const startOrder: Feature[] = [processes, previews, agent, templates, webhooks, lifecycle];
  /**
   * Shutdown order: what streams to clients first; then (subscriptions ended) the lifecycle's queued
   * work, and only then the webhooks' outbox, which takes the events that work publishes.
   */
  const closeFirst: Feature[] = [logs, processes, terminals, previews, agent];
  const closeLast: Feature[] = [lifecycle, webhooks];
  for (const f of features) {
    // A feature that starts or stops is placed in the orders above (a new one must be, to run at all).
    if ((f.start && !startOrder.includes(f)) || (f.stop && !closeFirst.includes(f) && !closeLast.includes(f))) throw new Error('workspaces: a feature with start or stop is missing from its order');
  }

  const app = mountFeatures(
    createServiceApp(deps, {
      name: 'workspaces',
      style: 'envelope',
      errors: workspaceErrorTable,
      models: features.flatMap((f) => f.models ?? []),
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
      // Before the workspace auth: the dashboard's page, and the terminal attach (authorised by its ticket).
      .use(uiRoutes({ assets: uiAssets }))
      .use(terminals.attach)
      .use(auth),
    features,
  );

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

  let stopListening = () => {};
  return {
    app,
    workspaces,
    async start() {
      // Subscriptions before the first await: main.ts calls start() right after the app listens, so no
      // event of a request is missed (webhook deliveries, the event stream's ring).
      stopListening = listenFeatures(features, deps.bus);
      // One workspaces process per database: its containers, queues and streams live in the process.
      if (!(await store.claim('keel-workspaces-service'))) {
        throw new ConfigError('APP_DATABASE_URL', 'another Keel process runs the workspaces service on this database; run one per database (docs/operations.md)');
      }
      announce();
      targets.start();
      for (const f of startOrder) await f.start?.();
      // Images of template versions no one gets any more (a crash may have cut a collection short).
      void templates.service.collect();
    },
    async stop() {
      for (const f of closeFirst) await f.stop?.();
      stopListening();
      for (const f of closeLast) await f.stop?.();
      targets.stop();
    },
  };
}

export const workspacesService = defineService({ loadConfig: loadSettings, create: createWorkspacesService });
