// The workspace lifecycle as one service object for the routes: it composes the parts in this folder
// (reservations, provisioning, the state machine, reconciliation, stats, views) over one engine, one
// database and one bus. No Elysia and no dockerode here.
import { WorkspaceErrors } from '../workspaces.errors';
import { createBoundedQueue } from '../../../platform/bounded-queue';
import type { Bus } from '../../../platform/bus/bus';
import type { Store } from '../../../platform/store';
import type { DeniedAddresses, TargetPolicy } from '../../../platform/net/address-policy';
import type { Actor } from '../../../platform/auth/workspace-token';
import { errorFields, type Clock, type Logger } from '../../../platform/runtime';
import { engineFailure, type Access } from '../access';
import type { Engine } from '../engine/engine';
import type { Engines } from '../engine/engines';
import { createFirewalls } from '../network/firewalls';
import { templateImage } from '../images/template-image';
import { MiB } from './stats';
import { createReservations } from './ports';
import { createProvisioner } from './provision';
import { createReconciler } from './reconcile';
import { createLifecycleRepository } from './lifecycle.repository';
import { repoUrlProblem, type RepoRequest } from '../clones/repo-clone';
import { createStateMachine } from './state-machine';
import { createStats } from './stats';
import type { Activity } from '../activity';
import { createSnapshots, snapshotNotFound } from '../snapshots/snapshots.service';
import { createWarmPool, type WarmPool } from '../pool/pool.service';
import { createTaskQueue } from './task-queue';
import { DEFAULT_TEMPLATE, type Template, type TemplateRegistry } from '../images/templates';
import { createdView, workspaceView, type CreatedView } from './views';
import { codeSecret } from './code-secret';
import type { CreateWorkspaceInput } from './lifecycle.model';
import type { WorkspacesConfig } from '../workspaces.config';
import type { Quotas } from '../quotas';
import type { WorkspaceRow, WorkspaceStatus, WorkspaceType } from '../workspaces.tables';

export interface LifecycleDeps {
  store: Store;
  bus: Bus;
  log: Logger;
  clock: Clock;
  settings: WorkspacesConfig;
  /** The routed engine (engine/engines.ts): each call goes to the engine of the workspace it concerns. */
  engine: Engine;
  /** The engines themselves: placement, which one answers, each one's settings. */
  engines: Engines;
  access: Access;
  /** When each workspace was last used (../activity.ts); the lifecycle runs its idle sweep. */
  activity: Activity;
  quotas: Quotas;
  /** The templates a workspace can be created from (images/templates.ts). */
  templates: TemplateRegistry;
  /** A create's `template` for the actor: a built-in, or the registry name of their (or a public) template's version. */
  resolveTemplate?: (actor: Actor, name: string) => Promise<string>;
  /** The registry name of the public template called `name`, at its ready version (APP_WARM_POOL names them). */
  publicTemplate?: (name: string) => Promise<string | undefined>;
  /** Marks this Keel's containers and volumes, so several Keels (or test runs) can share one engine. */
  instance: string;
  /** Where snapshot volume archives are kept (`$APP_DATA_DIR/snapshots`). */
  snapshotDir: string;
  /** Key of the per-workspace code-server secrets (code-secret.ts). */
  codeKey: Buffer;
  /** Addresses a repo clone may never reach beyond the platform's rules (targets.ts). */
  cloneDeny?: DeniedAddresses;
  /** Told of each workspace event in the transaction of its change (usage/usage.service.ts). */
  onEvent?: Parameters<typeof createLifecycleRepository>[0]['onEvent'];
}

/** How long close() waits for queued engine work before giving up on it (the next start-up finishes it). */
const CLOSE_WAIT_MS = 15_000;

const cloneQueueFull = () =>
  WorkspaceErrors.CLONE_QUEUE_FULL('too many repo clones are running or waiting; nothing was created, retry later');

export function createLifecycle(deps: LifecycleDeps) {
  const { engine, access, activity, log, instance, quotas, templates } = deps;
  const [portLo, portHi] = deps.settings.workspacePortRange;
  const clonePolicy: TargetPolicy = { denyPrivate: deps.settings.clone.denyPrivate, deny: deps.cloneDeny };
  // One queue for every actor's clones: a bounded number run, a bounded number wait, the rest are refused.
  const clones = createBoundedQueue(deps.settings.clone);
  const host = deps.settings.publicHost;
  const records = createLifecycleRepository(deps);
  const queue = createTaskQueue(log);
  const stats = createStats({ engine, clock: deps.clock, log, templates, running: records.running });
  const reservations = createReservations({
    store: deps.store,
    repository: records,
    clock: deps.clock,
    portRange: deps.settings.workspacePortRange,
    autoStopMinutes: deps.settings.autoStopMinutes,
    quotas,
    held: () => pool.heldPorts(),
    // A claimed warm entry is stored running: its created and started events go in the same transaction.
    inserted: async (tx, row) => {
      await records.recordEvent(tx, 'created', row);
      if (row.status === 'running') await records.recordEvent(tx, 'started', row);
    },
  });
  const { engines } = deps;
  const firewall = createFirewalls({ instance, log, settings: deps.settings, engines, engineOfWorkspace: async (id) => (await access.row(id))?.engine ?? pool.engineOf(id) });
  const snapshots = createSnapshots({ store: deps.store, engine, access, queue, clock: deps.clock, log, instance, dir: deps.snapshotDir, quota: deps.settings.snapshotQuota });
  const provisioner = createProvisioner({ engine, engines, records, access, settings: deps.settings, log, instance, firewall, codeKey: deps.codeKey, clonePolicy, snapshots, builderOf: templates.builderOf });
  const pool: WarmPool = createWarmPool({ settings: deps.settings, templates, engine, engines, firewall, provisioner, holdPorts: reservations.holdPorts,
    lookup: deps.publicTemplate ? async (name) => {
      const key = await deps.publicTemplate!(name);
      return key ? templates.get(key) : undefined;
    } : undefined,
    clock: deps.clock, log: log.child({ component: 'warm-pool' }) });
  const view = (row: WorkspaceRow) => workspaceView(row, host, codeSecret(deps.codeKey, row.id));

  async function destroy(row: WorkspaceRow, removeVolume: boolean): Promise<void> {
    if (row.containerId) await engine.remove(row.containerId);
    else {
      // A container created just before a crash is found by its label.
      for (const c of await engine.listManaged(instance)) if (c.workspaceId === row.id) await engine.remove(c.id);
    }
    if (removeVolume) await engine.removeVolume(row.volume);
    await records.delete(row, !removeVolume);
    stats.forget(row, { disk: true });
    activity.forget(row.id);
    // After the row: the workspace is gone once its container is. A network left by a failure here has
    // no workspace, so the next reconciliation removes it with its rules.
    await provisioner.removeNetwork(row.id).catch((e) => log.warn('workspace network not removed', { workspace: row.id, ...errorFields(e) }));
    // The last workspace made from a deleted snapshot takes its image and archive with it (a failure
    // here leaves them to the next start-up).
    if (row.snapshotId) await snapshots.release(row.snapshotId).catch((e) => log.warn('snapshot objects not removed', { snapshot: row.snapshotId, ...errorFields(e) }));
  }

  const machine = createStateMachine({ engine, records, access, queue, provisioner, stats, templates, settings: deps.settings, log, quotas, destroy });
  const reconciler = createReconciler({ engine, records, access, queue, machine, log, instance, firewall, removeNetwork: provisioner.removeNetwork, engineUp: (row) => engines.isUp(row.engine), pooled: () => pool.ids() });

  /** The warm path of create: the entry's row stored `running` (name and quotas checked in the same step), or null. */
  async function claimWarm(actor: Actor, input: CreateWorkspaceInput, template: Template, poolName: string): Promise<CreatedView | null> {
    const entry = await pool.take(poolName, template.name);
    if (!entry) return null;
    let row: WorkspaceRow;
    try {
      row = await reservations.reserve(actor, input, template, entry.engine, entry);
    } catch (e) {
      pool.giveBack(entry);
      throw e;
    }
    pool.claimed(entry);
    records.relay();
    stats.begin(row);
    activity.expect(row.autoStopMinutes);
    return createdView(row, host, codeSecret(deps.codeKey, row.id));
  }

  const lifecycle = {
    async list(actor: Actor, filter: { status?: WorkspaceStatus; type?: WorkspaceType }) {
      return (await records.list(actor, filter)).map(view);
    },

    async get(actor: Actor, id: string) {
      const row = await access.getOwned(actor, id);
      // Where it runs is the operator's business: only an admin is shown the engine.
      return { ...view(row), ...(actor.admin ? { engine: engines.nameOf(row.engine) } : {}), stats: await stats.of(row) };
    },

    /**
     * Checks the input, the actor's quotas (429), a place in the clone queue for a repo (503
     * CLONE_QUEUE_FULL) and that an engine answers (503 ENGINE_UNAVAILABLE), then reserves the name
     * and ports (the quota checked again in the same step as the insert) and queues provisioning;
     * answers `creating` at once. Whatever is refused, nothing is stored.
     */
    async create(actor: Actor, input: CreateWorkspaceInput): Promise<CreatedView> {
      if (input.snapshot) {
        // A snapshot brings its template and its files: no repo is cloned over them.
        let source;
        try {
          source = await snapshots.getOwned(actor, input.snapshot);
        } catch {
          throw snapshotNotFound();
        }
        input = { ...input, template: source.template, repo: undefined };
      }
      // The name as asked: APP_WARM_POOL names public templates by it (resolved, it is one version's).
      const asked = input.template ?? DEFAULT_TEMPLATE;
      if (input.template && !input.snapshot && deps.resolveTemplate) input = { ...input, template: await deps.resolveTemplate(actor, input.template) };
      const template = templates.get(input.template ?? DEFAULT_TEMPLATE);
      if (!template) {
        throw WorkspaceErrors.INVALID_REQUEST('unknown template', { property: '/template', known: templates.names() });
      }
      if (input.port !== undefined && !actor.admin && (input.port < portLo || input.port > portHi)) {
        throw WorkspaceErrors.INVALID_REQUEST(`port must be within APP_WORKSPACE_PORT_RANGE (${portLo}-${portHi})`, { property: '/port', range: `${portLo}-${portHi}` });
      }
      if (input.repo) {
        const problem = repoUrlProblem(input.repo.url, clonePolicy);
        if (problem) throw WorkspaceErrors.INVALID_REQUEST(problem, { property: '/repo/url' });
      }
      await quotas.checkCreate(actor);
      // A create a warm entry can serve (no port, repo or snapshot) claims one; with none ready it goes cold.
      if (input.port === undefined && !input.repo && !input.snapshot && pool.serves(asked)) {
        const warm = await claimWarm(actor, input, template, asked);
        if (warm) return warm;
      }
      const ticket = input.repo ? clones.admit() : undefined;
      if (ticket === null) throw cloneQueueFull();
      try {
        const placed = await engines.place(templateImage(template, deps.settings), template.resources.memoryMb * MiB).catch((e) => {
          throw engineFailure(e);
        });
        const isolation = await firewall.of(placed).status();
        if (!isolation.active && engines.settingsOf(placed).firewall === 'required') {
          throw WorkspaceErrors.ISOLATION_UNAVAILABLE(`workspace network isolation is unavailable, so no workspace is created: ${isolation.reason}`, { setting: 'APP_WORKSPACE_FIREWALL' });
        }
        const row = await reservations.reserve(actor, input, template, engines.names.length > 1 ? placed : null);
        records.relay();
        const repo: RepoRequest | undefined = input.repo && ticket ? { url: input.repo.url, branch: input.repo.branch, ticket } : undefined;
        machine.create(row, repo);
        activity.expect(row.autoStopMinutes);
        return createdView(row, host, codeSecret(deps.codeKey, row.id));
      } catch (e) {
        ticket?.release();
        throw e;
      }
    },

    // An operation on a workspace whose engine does not answer is refused (503) before anything moves.
    async start(actor: Actor, id: string) {
      const row = access.engineReady(await access.getOwned(actor, id));
      const started = await machine.start(actor, row);
      activity.expect(row.autoStopMinutes);
      return started;
    },
    stop: async (actor: Actor, id: string, force: boolean) => machine.stop(access.engineReady(await access.getOwned(actor, id)), force),
    async restart(actor: Actor, id: string) {
      const row = access.engineReady(await access.getOwned(actor, id));
      const restarted = await machine.restart(actor, row);
      activity.expect(row.autoStopMinutes);
      return restarted;
    },
    pause: async (actor: Actor, id: string) => machine.freeze(access.engineReady(await access.getOwned(actor, id)), 'pause'),
    resume: async (actor: Actor, id: string) => machine.freeze(access.engineReady(await access.getOwned(actor, id)), 'resume'),

    snapshots: {
      list: async (actor: Actor) => (await snapshots.list(actor)).map(snapshots.view),
      get: async (actor: Actor, id: string) => snapshots.view(await snapshots.getOwned(actor, id)),
      create: async (actor: Actor, workspaceId: string, name: string) => snapshots.view(await snapshots.create(actor, workspaceId, name)),
      remove: (actor: Actor, id: string) => snapshots.remove(actor, id),
      /** The caller's snapshot's image and the template its workspace ran (another's is 404). */
      source: async (actor: Actor, id: string) => {
        const row = await snapshots.getOwned(actor, id);
        return { image: row.image, template: templates.get(row.template) };
      },
    },

    /**
     * `count` new workspaces `<name>-1` ... `<name>-<count>` from one snapshot (named `name`) of the
     * workspace. The names and the actor's workspace and running quotas are checked for all of them
     * before anything is made: a fork is refused whole (409, 429) rather than left half done.
     */
    async fork(actor: Actor, id: string, input: { name: string; count: number }): Promise<{ workspaces: CreatedView[] }> {
      const names = Array.from({ length: input.count }, (_, i) => `${input.name}-${i + 1}`);
      for (const n of names) {
        if (n.length > 63) throw WorkspaceErrors.INVALID_REQUEST('name plus the "-<n>" suffix must fit in 63 characters', { property: '/name' });
        if (await records.nameTaken(n)) throw WorkspaceErrors.WORKSPACE_EXISTS('a workspace with this name already exists', { name: n });
      }
      if (!actor.admin) {
        const used = await quotas.usage(actor);
        if (used.workspaces + input.count > quotas.limits.workspaces) {
          throw WorkspaceErrors.QUOTA_EXCEEDED(`a fork of ${input.count} would pass APP_QUOTA_WORKSPACES`, { quota: 'workspaces', limit: quotas.limits.workspaces });
        }
        if (used.running + input.count > quotas.limits.running) {
          throw WorkspaceErrors.QUOTA_EXCEEDED(`a fork of ${input.count} would pass APP_QUOTA_RUNNING`, { quota: 'running', limit: quotas.limits.running });
        }
      }
      const source = await access.getOwned(actor, id);
      const snap = await snapshots.create(actor, id, input.name);
      const made: CreatedView[] = [];
      for (const name of names) made.push(await lifecycle.create(actor, { name, snapshot: snap.id, type: source.type, autoStopMinutes: source.autoStopMinutes }));
      return { workspaces: made };
    },

    /** A public template's ready version changed or it went: the warm pool follows. */
    refreshPool: () => pool.refresh(),

    /** Where a warm pool entry lives (no row places it yet): engines route its calls by this. */
    pooledEngine: (id: string) => pool.engineOf(id),

    /** Keel's active workspaces on an engine and the memory their templates ask (placement, engine/engines.ts). */
    async placementLoad(name: string): Promise<{ active: number; memoryBytes: number }> {
      // Warm entries hold their memory while they wait: placement counts them.
      let { active, memoryBytes } = pool.load(name);
      for (const r of await records.active()) {
        if (engines.nameOf(r.engine) !== name) continue;
        active++;
        memoryBytes += (templates.get(r.template)?.resources.memoryMb ?? 0) * MiB;
      }
      return { active, memoryBytes };
    },

    /** The actor's quotas and what it uses of each (admins are not limited). */
    async quotas(actor: Actor) {
      return { exempt: actor.admin, limits: { ...quotas.limits }, used: await quotas.usage(actor) };
    },

    /**
     * Removes the container, the row and (with `volumes`, or for a temporary workspace) the volume;
     * a volume kept is listed and removed by volumes/ (GET and DELETE /api/volumes).
     */
    async remove(actor: Actor, id: string, volumes: boolean): Promise<{ id: string; deleted: true }> {
      access.engineReady(await access.getOwned(actor, id));
      provisioner.cancel(id);
      let failure: unknown;
      let refused: unknown;
      await queue.enqueue(id, async () => {
        const row = await access.row(id);
        if (!row) return;
        const keep = !volumes && row.type !== 'temporary';
        // A kept volume counts against its owner's APP_QUOTA_VOLUMES from before anything is removed:
        // past it the delete answers 429 and the workspace stays as it was (volumes=true still works).
        if (keep) {
          try {
            await quotas.admitKeptVolume(actor, row.owner, (tx) => records.keepVolume(row, tx));
          } catch (e) {
            refused = e;
            return;
          }
        }
        try {
          await destroy(row, !keep);
        } catch (e) {
          if (keep && (await access.row(id))) await records.unkeepVolume(row.volume);
          failure = e;
        }
      });
      if (refused) throw refused;
      if (failure) throw engineFailure(failure);
      return { id, deleted: true };
    },

    /** Start-up: sample stats, follow engine events, then reconcile every workspace (finishing what a crash cut short). */
    async startUp(): Promise<void> {
      // Sampling first: engine trouble below must not leave GET without stats once the engine answers.
      stats.start();
      for (const e of deps.settings.engines) {
        const isolation = await firewall.of(e.name).status();
        if (!isolation.active) {
          log.warn(`workspace network isolation: ${isolation.reason}; ${e.firewall === 'required' ? 'creating workspaces is refused (503 ISOLATION_UNAVAILABLE)' : 'workspaces reach the Keel host and metadata addresses'} (docs/security.md)`, { engine: e.name });
        }
      }
      // An engine back after an outage: its workspaces are settled from what it reports now, and an
      // operation its outage left in progress is finished, as at start-up (one queued now is busy and left alone).
      engines.onBack(() => void reconciler.reconcileAll({ startUp: true }).catch((e) => log.warn('reconciliation failed', errorFields(e))));
      engines.start();
      // Events a crash left unsent go out first, then each new one as it commits.
      records.startRelay();
      await reconciler.watch();
      await reconciler.reconcileAll({ startUp: true });
      await snapshots.reconcile();
      activity.start({ awake: records.awake, stopIdle: machine.stopIdle });
      // After reconciliation removed a previous run's entries (they belong to no row).
      pool.start();
    },

    /** Stops following events and waits (bounded) for queued engine work. */
    async close(): Promise<void> {
      reconciler.stop();
      const poolGone = pool.stop(CLOSE_WAIT_MS);
      activity.stop();
      engines.stop();
      stats.stop();
      // A clone in flight is cut short; the workspace stays `creating` and the next start-up settles it.
      provisioner.cancelAll();
      await Promise.all([queue.drain(CLOSE_WAIT_MS), poolGone]);
      await records.stopRelay();
    },
  };
  return lifecycle;
}

export type Lifecycle = ReturnType<typeof createLifecycle>;
