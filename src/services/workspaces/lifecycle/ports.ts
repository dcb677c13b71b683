// Names and host ports of workspaces: a port is free when no workspace reserves it and no process on
// the host holds it (network/host-ports.ts). A reservation is the inserted row.
import { AppError } from '../../../platform/errors';
import { WorkspaceErrors } from '../workspaces.errors';
import type { Orm, Store } from '../../../platform/store';
import type { Actor } from '../../../platform/auth/workspace-token';
import { isoNow, newId, type Clock } from '../../../platform/runtime';
import { allocatePorts, hostPortFree } from '../network/host-ports';
import { scrubUrls } from '../clones/repo-clone';
import type { Template } from '../images/templates';
import type { CreateWorkspaceInput } from './lifecycle.model';
import type { Quotas } from '../quotas';
import type { WorkspaceRow } from '../workspaces.tables';
import type { LifecycleRepository } from './lifecycle.repository';

/** A warm container made ahead for a workspace to come (pool.ts): everything its row will record. */
export interface WarmEntry {
  id: string;
  /** The APP_WARM_POOL name it waits under (a built-in's, or a public template's). */
  pool: string;
  /** The registry name of the template it was made from (for a public template, one version). */
  template: string;
  engine: string | null;
  port: number;
  sshPort: number;
  rdpPort: number;
  volume: string;
  containerId: string;
}

/** The volume of workspace `id` (pool entries pre-allocate the id, so theirs is the same). */
export const volumeOf = (id: string) => `keel-ws-${id.replace('_', '-')}`;

export function createReservations(deps: {
  store: Store;
  repository: Pick<LifecycleRepository, 'insert' | 'reservedPorts' | 'nameTaken'>;
  clock: Clock;
  portRange: [number, number];
  quotas: Quotas;
  /** `autoStopMinutes` of a create that names none (APP_AUTO_STOP_MINUTES). */
  autoStopMinutes: number;
  /** Ports the warm pool holds for its entries (pool.ts): no workspace may take them. */
  held?: () => Iterable<number>;
  /** Writes what goes with the new row in its transaction (the workspace.created event). */
  inserted(tx: Orm, row: WorkspaceRow): Promise<void>;
}) {
  const { portRange, clock, repository } = deps;
  const [lo, hi] = portRange;
  let portHint = 0;
  // One reservation at a time in this process, so two creates cannot take the same name or port.
  let queue: Promise<unknown> = Promise.resolve();

  async function taken(): Promise<Set<number>> {
    const reserved = new Set(await repository.reservedPorts());
    for (const p of deps.held?.() ?? []) reserved.add(p);
    return reserved;
  }

  /**
   * `engine`: where placement put the workspace (engine/engines.ts); it stays there. `warm`: a pool
   * entry being claimed (pool.ts): its pre-allocated id, ports, volume and running container are
   * recorded as they are, in `running`, in the one insert (a crash leaves the row or an unowned entry).
   */
  async function reserve(actor: Actor, input: CreateWorkspaceInput, template: Template, engine: string | null = null, warm?: WarmEntry): Promise<WorkspaceRow> {
    if (await repository.nameTaken(input.name)) {
      throw WorkspaceErrors.WORKSPACE_EXISTS('a workspace with this name exists', { property: '/name' });
    }
    if (warm) return insert(actor, input, template, warm.engine, warm);
    const reserved = await taken();
    if (input.port !== undefined) {
      if (reserved.has(input.port)) {
        throw WorkspaceErrors.PORT_UNAVAILABLE('the requested port is used by another workspace', { port: input.port });
      }
      if (!(await hostPortFree(input.port))) {
        throw WorkspaceErrors.PORT_UNAVAILABLE('the requested port is in use on the host', { port: input.port });
      }
      reserved.add(input.port);
    }
    const auto = await allocatePorts(portRange, reserved, input.port === undefined ? 3 : 2, portHint);
    if (!auto) {
      throw WorkspaceErrors.PORT_UNAVAILABLE('no free port is left in APP_WORKSPACE_PORT_RANGE', { range: `${lo}-${hi}` });
    }
    portHint = (auto[auto.length - 1]! - lo + 1) % (hi - lo + 1);
    const [port, sshPort, rdpPort] = input.port === undefined ? auto : [input.port, ...auto];
    const id = newId('ws', clock);
    return insert(actor, input, template, engine, { id, port: port!, sshPort: sshPort!, rdpPort: rdpPort!, volume: volumeOf(id), containerId: null, engine });
  }

  async function insert(actor: Actor, input: CreateWorkspaceInput, template: Template, engine: string | null, at: Omit<WarmEntry, 'containerId' | 'template' | 'pool'> & { containerId: string | null }): Promise<WorkspaceRow> {
    const now = isoNow(clock);
    const warm = at.containerId !== null;
    const row: WorkspaceRow = {
      id: at.id,
      name: input.name,
      owner: actor.id,
      template: template.name,
      type: input.type ?? 'persistent',
      status: warm ? 'running' : 'creating',
      port: at.port,
      sshPort: at.sshPort,
      rdpPort: at.rdpPort,
      containerId: at.containerId,
      engine,
      volume: at.volume,
      provisioned: warm,
      repoUrl: input.repo ? scrubUrls(input.repo.url) : null,
      repoBranch: input.repo?.branch ?? null,
      reason: null,
      autoStopMinutes: input.autoStopMinutes ?? deps.autoStopMinutes,
      stopReason: null,
      snapshotId: input.snapshot ?? null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      // The actor's quotas are checked again in the transaction of the insert, under the actor's lock:
      // creates that passed the early check together cannot overshoot.
      await deps.quotas.admitCreate(actor, async (tx) => {
        await repository.insert(tx, row);
        await deps.inserted(tx, row);
      });
    } catch (e) {
      if (e instanceof AppError) throw e;
      // The checks above run alone in this process; a unique violation means another Keel shares the database.
      if (deps.store.isUniqueViolation(e, { table: 'workspaces_workspaces', column: 'name' })) throw WorkspaceErrors.WORKSPACE_EXISTS('a workspace with this name exists');
      if (deps.store.isUniqueViolation(e)) throw WorkspaceErrors.PORT_UNAVAILABLE('the port was taken meanwhile; retry');
      throw e;
    }
    return row;
  }

  /** Three free ports of the range for a pool entry; `hold` records them in the same step, so no create takes them. */
  function holdPorts(hold: (ports: [number, number, number]) => void): Promise<[number, number, number] | null> {
    const run = async () => {
      const auto = await allocatePorts(portRange, await taken(), 3, portHint);
      if (!auto) return null;
      portHint = (auto[2]! - lo + 1) % (hi - lo + 1);
      const ports = auto as [number, number, number];
      hold(ports);
      return ports;
    };
    const next = queue.then(run, run);
    queue = next.catch(() => {});
    return next;
  }

  return {
    holdPorts,

    /** Checks the name and ports and inserts the row in `creating`; 409 when either is taken. */
    reserve(actor: Actor, input: CreateWorkspaceInput, template: Template, engine: string | null = null, warm?: WarmEntry): Promise<WorkspaceRow> {
      const run = () => reserve(actor, input, template, engine, warm);
      const next = queue.then(run, run);
      queue = next.catch(() => {});
      return next;
    },
  };
}
