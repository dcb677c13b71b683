// Names and host ports of workspaces: a port is free when no workspace reserves it and no process on
// the host holds it (network/host-ports.ts). A reservation is the inserted row.
import { eq } from 'drizzle-orm';
import { AppError } from '../../../platform/errors';
import '../workspaces.errors';
import type { Db } from '../../../platform/db';
import type { Actor } from '../../../platform/auth/workspace-token';
import { isoNow, newId, type Clock } from '../../../platform/runtime';
import { allocatePorts, hostPortFree } from '../network/host-ports';
import { scrubUrls } from './repo-clone';
import type { Template } from '../images/templates';
import type { CreateWorkspaceInput } from './lifecycle.model';
import type { Quotas } from '../quotas';
import { workspaces, type WorkspaceRow } from '../workspaces.tables';

export function createReservations(deps: {
  db: Db;
  clock: Clock;
  portRange: [number, number];
  quotas: Quotas;
  /** `autoStopMinutes` of a create that names none (APP_AUTO_STOP_MINUTES). */
  autoStopMinutes: number;
  /** Writes what goes with the new row in its transaction (the workspace.created event). */
  inserted(tx: Parameters<Parameters<Db['transaction']>[0]>[0], row: WorkspaceRow): void;
}) {
  const { db, portRange, clock } = deps;
  const [lo, hi] = portRange;
  let portHint = 0;
  // One reservation at a time in this process, so two creates cannot take the same name or port.
  let queue: Promise<unknown> = Promise.resolve();

  function taken(): Set<number> {
    const reserved = new Set<number>();
    for (const r of db.select({ a: workspaces.port, b: workspaces.sshPort, c: workspaces.rdpPort }).from(workspaces).all()) {
      reserved.add(r.a).add(r.b).add(r.c);
    }
    return reserved;
  }

  /** `engine`: where placement put the workspace (engine/engines.ts); it stays there. */
  async function reserve(actor: Actor, input: CreateWorkspaceInput, template: Template, engine: string | null = null): Promise<WorkspaceRow> {
    if (db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.name, input.name)).get()) {
      throw new AppError('WORKSPACE_EXISTS', 'a workspace with this name exists', { property: '/name' });
    }
    const reserved = taken();
    if (input.port !== undefined) {
      if (reserved.has(input.port)) {
        throw new AppError('PORT_UNAVAILABLE', 'the requested port is used by another workspace', { port: input.port });
      }
      if (!(await hostPortFree(input.port))) {
        throw new AppError('PORT_UNAVAILABLE', 'the requested port is in use on the host', { port: input.port });
      }
      reserved.add(input.port);
    }
    const auto = await allocatePorts(portRange, reserved, input.port === undefined ? 3 : 2, portHint);
    if (!auto) {
      throw new AppError('PORT_UNAVAILABLE', 'no free port is left in APP_WORKSPACE_PORT_RANGE', { range: `${lo}-${hi}` });
    }
    portHint = (auto[auto.length - 1]! - lo + 1) % (hi - lo + 1);
    const [port, sshPort, rdpPort] = input.port === undefined ? auto : [input.port, ...auto];
    const id = newId('ws', clock);
    const now = isoNow(clock);
    const row: WorkspaceRow = {
      id,
      name: input.name,
      owner: actor.id,
      template: template.name,
      type: input.type ?? 'persistent',
      status: 'creating',
      port: port!,
      sshPort: sshPort!,
      rdpPort: rdpPort!,
      containerId: null,
      engine,
      volume: `keel-ws-${id.replace('_', '-')}`,
      provisioned: false,
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
      // The actor's quotas are checked again in the same synchronous step as the insert: creates that
      // passed the early check together cannot overshoot.
      deps.quotas.admitCreate(actor, () =>
        db.transaction((tx) => {
          tx.insert(workspaces).values(row).run();
          deps.inserted(tx, row);
        }),
      );
    } catch (e) {
      if (e instanceof AppError) throw e;
      // The checks above run alone in this process; a unique violation means another Keel shares the database.
      const msg = String((e as Error).message);
      if (msg.includes('workspaces_workspaces.name')) throw new AppError('WORKSPACE_EXISTS', 'a workspace with this name exists');
      if (msg.includes('UNIQUE')) throw new AppError('PORT_UNAVAILABLE', 'the port was taken meanwhile; retry');
      throw e;
    }
    return row;
  }

  return {
    /** Checks the name and ports and inserts the row in `creating`; 409 when either is taken. */
    reserve(actor: Actor, input: CreateWorkspaceInput, template: Template, engine: string | null = null): Promise<WorkspaceRow> {
      const run = () => reserve(actor, input, template, engine);
      const next = queue.then(run, run);
      queue = next.catch(() => {});
      return next;
    },
  };
}
