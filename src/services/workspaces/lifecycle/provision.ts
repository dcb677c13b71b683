// Provisioning: what a workspace needs on the engine before it can run (the template's image, the
// volume, the container, the repo copied in). Each step finds what exists first, so the same code
// finishes a creation that a crash of Keel cut short.
import { errorFields, type Logger } from '../../../platform/runtime';
import { EngineError, LABEL_INSTANCE, LABEL_POOL, LABEL_MANAGED, LABEL_OWNER, LABEL_TEMPLATE, LABEL_WORKSPACE, type Engine } from '../engine/engine';
import { buildTemplateImage, templateImage } from '../images/template-image';
import { CloneError, cloneRepo, scrubUrls, type RepoRequest } from '../clones/repo-clone';
import { tarDirectory } from '../images/tar';
import { MiB, MOUNT_PATH } from './stats';
import { supervisorScript } from './supervisor';
import { CODE_SECRET_ENV, codeSecret } from './code-secret';
import { createWorkspaceNetworks, networkName } from '../network/workspace-network';
import type { Firewall } from '../network/firewall';
import type { Engines } from '../engine/engines';
import type { Template } from '../images/templates';
import type { LifecycleRepository } from './lifecycle.repository';
import type { Access } from '../access';
import type { WorkspacesConfig } from '../workspaces.config';
import type { WorkspaceRow } from '../workspaces.tables';
import type { TargetPolicy } from '../../../platform/net/address-policy';

/** The reason a failed workspace shows: the git or engine message, secrets scrubbed; anything else is logged too. */
export function failureReason(e: unknown, log: Logger): string {
  if (e instanceof CloneError) return e.message;
  if (e instanceof EngineError) return scrubUrls(`engine: ${e.message}`).slice(0, 500);
  log.error('workspace operation failed', errorFields(e));
  return scrubUrls(e instanceof Error ? e.message : String(e)).slice(0, 500);
}

/** How long a template's readyCommand may take to exit 0, and how often it runs until then. */
const READY_TIMEOUT_MS = 120_000;
const READY_POLL_MS = 500;

/** A template's readyCommand (`/bin/sh -c`) run until it exits 0: only then is a workspace (or a warm entry) ready. */
export async function untilReady(engine: Engine, containerId: string, template: Template): Promise<void> {
  if (!template.readyCommand) return;
  const until = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const r = await engine.execCollect(containerId, ['/bin/sh', '-c', template.readyCommand], 4096);
    if (r.exitCode === 0) return;
    if (Date.now() > until) {
      throw new EngineError(`the template's readyCommand did not exit 0 within ${READY_TIMEOUT_MS / 1000} s (last exit code ${r.exitCode}${r.stderr ? `: ${r.stderr.trim().slice(-200)}` : ''})`);
    }
    await Bun.sleep(READY_POLL_MS);
  }
}

/** What a workspace made from a snapshot takes from it (snapshots.ts). */
export interface SnapshotSource {
  image(snapshotId: string): Promise<string | null>;
  restoreVolume(containerId: string, snapshotId: string): Promise<void>;
}

export function createProvisioner(deps: {
  engine: Engine;
  engines: Engines;
  records: LifecycleRepository;
  access: Access;
  settings: WorkspacesConfig;
  log: Logger;
  instance: string;
  firewall: Firewall;
  codeKey: Buffer;
  clonePolicy: TargetPolicy;
  snapshots: SnapshotSource;
  /** How a template version people built is made on an engine that lacks its image (images/templates.ts). */
  builderOf?: (template: string) => ((engine: Engine) => Promise<void>) | undefined;
}) {
  const { engine, records, settings, log } = deps;
  const networks = createWorkspaceNetworks({ engine, engines: deps.engines, firewall: deps.firewall });
  const imageReady = new Map<string, Promise<void>>();
  /** Creations in progress, so a delete can cut a slow repo clone short instead of waiting for it. */
  const inFlight = new Map<string, AbortController>();

  /** Warm pool entries are made for an owner to come: they carry LABEL_POOL and an empty owner label. */
  const labels = (row: WorkspaceRow, pooled = false): Record<string, string> => ({
    [LABEL_MANAGED]: 'true',
    [LABEL_WORKSPACE]: row.id,
    [LABEL_OWNER]: row.owner,
    [LABEL_TEMPLATE]: row.template,
    [LABEL_INSTANCE]: deps.instance,
    ...(pooled ? { [LABEL_POOL]: row.template } : {}),
  });

  const imageOf = (template: Template) => templateImage(template, settings);

  /**
   * The template's image on the workspace's engine: present, built by Keel (images/template-image.ts),
   * or pulled; each engine gets its own on first use. One attempt at a time per engine and image.
   */
  function ensureImage(row: WorkspaceRow, template: Template): Promise<void> {
    const image = imageOf(template);
    const engine = deps.engines.at(row.engine);
    const key = `${deps.engines.nameOf(row.engine)}/${image}`;
    let p = imageReady.get(key);
    if (!p) {
      p = (async () => {
        if (await engine.imageExists(image)) return;
        if (await buildTemplateImage(engine, template, image, settings, log)) return;
        const build = deps.builderOf?.(template.name);
        if (build) return build(engine);
        try {
          await engine.pullImage(image);
        } catch (e) {
          throw new EngineError(`image ${image} is not present and could not be pulled (${(e as Error).message}); build it from templates/${template.name}/Dockerfile`);
        }
      })();
      imageReady.set(key, p);
      // Checked again next time (the image may be removed meanwhile); a failed attempt is simply retried.
      const forget = () => imageReady.delete(key);
      void p.then(forget, forget);
    }
    return p;
  }

  /**
   * The workspace's container: the recorded one while the engine has it, else a new one from the
   * template. Its network and firewall rules are ensured every time, and the rules are in place
   * before this returns, so no container starts unguarded (rules are lost when the host reboots; a
   * container made before networks existed, on the engine's default bridge, is made again on its own
   * network). The rules are applied while the container is made: only its start needs them.
   */
  async function ensureContainer(row: WorkspaceRow, template: Template, pooled = false): Promise<string> {
    const network = networks.ensure(row, labels(row, pooled));
    const [, containerId] = await Promise.all([network.then((net) => networks.protect(row.id, net)), containerOn(network, row, template, pooled)]);
    return containerId;
  }

  /** ensureContainer's container; the image and the orphans are seen to while `network` is made. */
  async function containerOn(network: Promise<unknown>, row: WorkspaceRow, template: Template, pooled: boolean): Promise<string> {
    if (row.containerId) {
      const state = await engine.inspect(row.containerId);
      if (state && state.networks.length === 1 && state.networks[0] === networkName(row.id)) return row.containerId;
      if (state) await engine.remove(row.containerId);
    }
    // From a snapshot: its committed image (kept while the workspace exists, even once the snapshot is deleted), else the template's.
    const snapshotImage = row.snapshotId ? await deps.snapshots.image(row.snapshotId) : null;
    if (row.snapshotId && !snapshotImage) throw new EngineError('the snapshot this workspace was made from no longer exists');
    if (!snapshotImage) await ensureImage(row, template);
    // A crash between the engine's create and the record below leaves a container of this workspace
    // that no row names (and that holds the name): it goes first, so the retry after the restart
    // makes the container again instead of colliding with it.
    for (const orphan of await engine.listManaged(deps.instance)) {
      if (orphan.workspaceId === row.id && orphan.id !== row.containerId) {
        log.warn('removing an unrecorded container of the workspace before making its container', { workspace: row.id, container: orphan.id.slice(0, 12) });
        await engine.remove(orphan.id);
      }
    }
    await network;
    const containerId = await engine.createContainer({
      name: `keel-${row.name}-${row.id.slice(-6)}`,
      image: snapshotImage ?? imageOf(template),
      cmd: ['/bin/sh', '-c', supervisorScript(template.command, template.services)],
      user: template.user,
      workdir: template.workdir,
      env: { ...template.env, KEEL_WORKSPACE_ID: row.id, KEEL_WORKSPACE_NAME: row.name, [CODE_SECRET_ENV]: codeSecret(deps.codeKey, row.id) },
      hostname: row.name.replace(/[._]/g, '-').slice(0, 63),
      labels: labels(row, pooled),
      volume: row.volume,
      mountPath: MOUNT_PATH,
      ports: [
        { container: template.ports.codeServer, host: row.port },
        { container: template.ports.ssh, host: row.sshPort },
        { container: template.ports.rdp, host: row.rdpPort },
      ],
      bindAddress: settings.bindAddress,
      memoryBytes: template.resources.memoryMb * MiB,
      nanoCpus: Math.round(template.resources.cpus * 1e9),
      pids: template.resources.pids,
      network: networkName(row.id),
      log: { maxSize: settings.logMaxSize, maxFiles: settings.logMaxFiles },
      diskLimit: settings.diskLimit || undefined,
    });
    if (!pooled) await records.update(row.id, { containerId });
    return containerId;
  }

  async function copyRepo(containerId: string, template: Template, repo: RepoRequest, signal: AbortSignal) {
    const clone = await cloneRepo({ ...repo, timeoutMs: settings.cloneTimeoutMs, maxBytes: settings.clone.maxBytes, policy: deps.clonePolicy, searchPath: settings.clone.searchPath, signal });
    try {
      const [uid, gid] = template.user.split(':').map(Number);
      const tar = tarDirectory(clone.dir, uid!, gid!);
      const packed = tar.done.catch((e) => {
        throw new CloneError(`packing the repo failed: ${(e as Error).message.slice(0, 200)}`);
      });
      const copied = engine.putArchive(containerId, MOUNT_PATH, tar.stream).catch((e) => {
        tar.stream.destroy(); // the walk stops: nothing reads what it would write
        throw e;
      });
      await Promise.all([copied, packed]);
    } finally {
      clone.cleanup();
    }
  }

  return {
    ensureContainer,

    /**
     * A warm pool entry (pool.ts): volume, network with its firewall rules, container, started. `row`
     * is the workspace-to-be (its id, ports and volume are the ones a claim records); no row is stored.
     */
    async makeWarm(row: WorkspaceRow, template: Template): Promise<string> {
      await engine.createVolume(row.volume, labels(row, true), settings.diskLimit || undefined);
      const containerId = await ensureContainer(row, template, true);
      try {
        await engine.start(containerId);
        // A warm entry is claimed `running` at once: a template's readyCommand has exited 0 before it waits in the pool.
        await untilReady(engine, containerId, template);
      } catch (e) {
        // The caller drops the entry's volume and network; the container it never learnt of goes here.
        await engine.remove(containerId).catch(() => {});
        throw e;
      }
      return containerId;
    },

    /** Removes the workspace's network and firewall rules (after its container). */
    removeNetwork: (workspaceId: string) => networks.remove(workspaceId),

    /**
     * Volume, container, repo: everything up to a container ready to start (`provisioned`). A failure
     * removes a container that never got its repo (the volume stays until delete) and rethrows; a
     * delete arriving meanwhile cancels it (answered as `cancelled`).
     */
    async provision(id: string, template: Template, repo: RepoRequest | undefined): Promise<{ containerId: string } | 'cancelled'> {
      const row = await deps.access.row(id);
      if (!row) return 'cancelled';
      const abort = new AbortController();
      inFlight.set(id, abort);
      try {
        await engine.createVolume(row.volume, labels(row), settings.diskLimit || undefined);
        const containerId = await ensureContainer(row, template);
        abort.signal.throwIfAborted();
        if (repo) await copyRepo(containerId, template, repo, abort.signal);
        else if (row.snapshotId && !row.provisioned) await deps.snapshots.restoreVolume(containerId, row.snapshotId);
        abort.signal.throwIfAborted();
        await records.update(id, { provisioned: true });
        return { containerId };
      } catch (e) {
        const current = await deps.access.row(id);
        if (current?.containerId && !current.provisioned) {
          await engine.remove(current.containerId).catch(() => {});
          await records.update(id, { containerId: null });
        }
        if (abort.signal.aborted) return 'cancelled';
        throw e;
      } finally {
        inFlight.delete(id);
      }
    },

    /** Cuts a creation in flight short (a delete is queued right behind it and removes the rest). */
    cancel(id: string) {
      inFlight.get(id)?.abort();
    },

    cancelAll() {
      for (const a of inFlight.values()) a.abort();
    },
  };
}

export type Provisioner = ReturnType<typeof createProvisioner>;
