// Keeps the stored state true to the engine: engine events (a container that dies or is removed
// behind Keel's back) while Keel runs, and a full pass at start-up that also finishes what a crash
// of Keel cut short and removes this instance's engine objects that no workspace owns.
import { errorFields, type Logger } from '../../../platform/runtime';
import type { Engine, ManagedObject } from '../engine/engine';
import type { Firewall } from '../network/firewall';
import type { Provisioner } from './provision';
import type { LifecycleRepository } from './lifecycle.repository';
import type { Access } from '../access';
import type { StateMachine } from './state-machine';
import type { TaskQueue } from './task-queue';
import type { WorkspaceRow } from '../workspaces.tables';

/** Statuses an operation holds while its engine call runs; at start-up, only a crash can have left them. */
const IN_PROGRESS = new Set(['creating', 'starting', 'stopping', 'restarting']);
const inProgress = (row: WorkspaceRow | undefined) => !!row && IN_PROGRESS.has(row.status);

export function createReconciler(deps: {
  engine: Engine;
  records: LifecycleRepository;
  access: Access;
  queue: TaskQueue;
  machine: StateMachine;
  log: Logger;
  instance: string;
  firewall: Firewall;
  /** The one way a workspace network goes: the network, then its rules (workspace-network.ts). */
  removeNetwork: Provisioner['removeNetwork'];
  /** Whether the workspace's engine answers: a workspace on an engine that does not waits for it to come back. */
  engineUp?: (row: WorkspaceRow) => boolean;
  /** Warm pool entries not yet recorded as workspaces (pool.ts): their objects are not orphans. */
  pooled?: () => Set<string>;
}) {
  const { engine, records, queue, machine, log, instance, firewall } = deps;
  let watcher: ReturnType<Engine['watchEvents']> | undefined;

  /** Settles one workspace from the engine after an event, unless an operation is queued that will do it. */
  function onEvent(id: string) {
    void queue.enqueue(
      id,
      async () => {
        // An operation queued or running settles the status itself when it ends.
        if (queue.busy(id) || inProgress(await deps.access.row(id))) return;
        await machine.settle(id);
      },
      false,
    );
  }

  /** This instance's containers, volumes and networks, or null when the engine does not answer (nothing is removed then). */
  async function managed(): Promise<{ containers: ManagedObject[]; volumes: ManagedObject[]; networks: ManagedObject[] } | null> {
    try {
      const [containers, volumes, networks] = await Promise.all([engine.listManaged(instance), engine.listManagedVolumes(instance), engine.listManagedNetworks(instance)]);
      return { containers, volumes, networks };
    } catch (e) {
      log.warn('the engine did not list its objects; clean-up skipped', errorFields(e));
      return null;
    }
  }

  /**
   * Every stored workspace against the engine. A creation cut short after its container was made but
   * before Keel recorded it adopts that container (found by its labels); then each workspace is
   * resumed or settled, and only after that are objects labelled with THIS instance and owned by no
   * workspace removed (other Keels share the engine under other instance labels).
   */
  async function reconcileAll(opts: { startUp: boolean }): Promise<void> {
    const found = await managed();
    if (opts.startUp) {
      for (const c of found?.containers ?? []) {
        const row = await deps.access.row(c.workspaceId);
        if (row && !row.containerId && row.status === 'creating') await records.update(row.id, { containerId: c.id });
      }
    }
    await Promise.all(
      (await records.ids()).map(async (id) => {
        const row = await deps.access.row(id);
        if (!row || queue.busy(id) || deps.engineUp?.(row) === false) return;
        // While Keel runs, an in-progress status belongs to an operation about to be queued: leave it.
        if (inProgress(row)) return opts.startUp ? machine.resume(row) : undefined;
        return queue.enqueue(id, () => machine.settle(id), false);
      }),
    );
    const owned = new Set([...(await records.ids()), ...(deps.pooled?.() ?? [])]);
    if (opts.startUp) {
      // Rules of this instance's workspaces that no longer exist (deleted while Keel was down, or a crash mid-delete).
      for (const id of await firewall.tagged()) if (!owned.has(id)) await firewall.release(id);
    }
    if (!found) return;
    for (const c of found.containers) {
      const row = await deps.access.row(c.workspaceId);
      // A second container of a workspace (made by a start that a crash cut short before recording it) goes too.
      const superseded = !!row?.containerId && row.containerId !== c.id && !queue.busy(row.id);
      if (!owned.has(c.workspaceId) || superseded) {
        log.warn('removing a container no workspace owns', { container: c.id.slice(0, 12), workspace: c.workspaceId });
        await engine.remove(c.id).catch((e) => log.warn('container removal failed', errorFields(e)));
      }
    }
    for (const n of found.networks) {
      if (owned.has(n.workspaceId)) {
        // Rules vanish with a host reboot or a flush: put them back for the workspaces that have a network.
        const net = opts.startUp ? await engine.inspectNetwork(n.id).catch(() => null) : null;
        if (net) await firewall.protect({ workspaceId: n.workspaceId, bridge: net.bridge, subnet: net.subnet }).catch((e) => log.warn('workspace firewall rules not applied', { workspace: n.workspaceId, ...errorFields(e) }));
        continue;
      }
      log.warn('removing a network no workspace owns', { network: n.id, workspace: n.workspaceId });
      // A network that cannot be removed keeps its rules; the next pass tries again.
      await deps.removeNetwork(n.workspaceId).catch((e) => log.warn('network removal failed', errorFields(e)));
    }
    const kept = await records.retainedVolumes();
    for (const v of found.volumes) {
      if (owned.has(v.workspaceId) || kept.has(v.id)) continue;
      log.warn('removing a volume no workspace owns', { volume: v.id, workspace: v.workspaceId });
      await engine.removeVolume(v.id).catch((e) => log.warn('volume removal failed', errorFields(e)));
    }
  }

  return {
    reconcileAll,

    /**
     * Follows engine events (start, die, destroy) while Keel runs; a gap in the stream triggers a full pass.
     * Settles once the engine streams them, so a pass begun after it misses no change (a crash's
     * snapshot commit that unpauses its container just after the pass looked).
     */
    watch(): Promise<void> {
      watcher = engine.watchEvents(
        instance,
        (e) => {
          if (['start', 'die', 'destroy', 'pause', 'unpause'].includes(e.action)) onEvent(e.workspaceId);
        },
        () => void reconcileAll({ startUp: false }).catch((err) => log.warn('reconciliation failed', errorFields(err))),
      );
      // Bounded: an engine slow to answer delays start-up at most this long (its gap reconciles later).
      return Promise.race([watcher.ready, Bun.sleep(10_000)]);
    },

    stop() {
      watcher?.stop();
    },
  };
}
