// What every workspace feature (lifecycle, logs, exec, and those to come) shares: reading a workspace
// the actor may see, its running container, and how an engine failure reads in the API. Features use
// this and engine/, never each other's service files.
import { AppError } from '../../platform/errors';
import { WorkspaceErrors } from './workspaces.errors';
import type { Store } from '../../platform/store';
import { canAccess, type Actor } from '../../platform/auth/workspace-token';
import { EngineError } from './engine/engine';
import type { WorkspaceRow } from './workspaces.tables';
import { createAccessRepository } from './access.repository';

export const workspaceNotFound = () => WorkspaceErrors.WORKSPACE_NOT_FOUND('workspace not found');

/** 503 when no engine answers: the client may retry later; nothing was done. */
const engineUnavailable = (e: EngineError) =>
  WorkspaceErrors.ENGINE_UNAVAILABLE(`no container engine answers; nothing was done (${e.message})`.slice(0, 400));

/** An engine failure as the API reports it: 503 when no engine answers, else 502 with the engine's message (it names no secret). */
export function engineFailure(e: unknown): AppError {
  if (e instanceof AppError) return e;
  if (e instanceof EngineError && e.kind === 'unavailable') return engineUnavailable(e);
  return WorkspaceErrors.ENGINE_ERROR(`the Docker engine refused the operation: ${e instanceof Error ? e.message : String(e)}`.slice(0, 400));
}

/**
 * `engineReady` throws (EngineError `unavailable`) when the workspace's engine is known not to answer
 * (engine/engines.ts): operations on the workspace then answer 503 ENGINE_UNAVAILABLE at once.
 * `used` hears every workspace an actor reached through getOwned (the idle countdown's API activity).
 */
export function createAccess(store: Store, opts: { engineReady?: (row: WorkspaceRow) => void; used?: (id: string) => void } = {}) {
  const rows = createAccessRepository(store);
  /** The stored workspace, whoever owns it (for the service's own bookkeeping, never for an actor). */
  const row = rows.row;

  /** The workspace if `actor` may see it (owner or admin), else 404: another actor's workspace looks absent. */
  async function getOwned(actor: Actor, id: string): Promise<WorkspaceRow> {
    const found = await row(id);
    if (!found || !canAccess(actor, found.owner)) throw workspaceNotFound();
    opts.used?.(id);
    return found;
  }

  /** The workspace's engine answers (as far as Keel knows), else 503 ENGINE_UNAVAILABLE with Retry-After. */
  function engineReady(row: WorkspaceRow): WorkspaceRow {
    try {
      opts.engineReady?.(row);
    } catch (e) {
      throw engineFailure(e);
    }
    return row;
  }

  /** The container of a workspace the actor may see that is `running`, else 404 or 409 WORKSPACE_NOT_RUNNING. */
  async function runningContainer(actor: Actor, id: string): Promise<string> {
    // The engine first: while it does not answer, the stored status may no longer be true.
    const ws = engineReady(await getOwned(actor, id));
    if (ws.status !== 'running' || !ws.containerId) {
      throw WorkspaceErrors.WORKSPACE_NOT_RUNNING(`the workspace is ${ws.status}; start it to run commands`, { status: ws.status });
    }
    return ws.containerId;
  }

  return {
    row,
    getOwned,
    runningContainer,
    engineReady,
    /** The engine recorded for a container or volume: a name, null (the first engine), undefined when no workspace has it. */
    engineOfContainer: rows.engineOfContainer,
    engineOfVolume: rows.engineOfVolume,
  };
}

export type Access = ReturnType<typeof createAccess>;
