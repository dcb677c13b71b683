// Where a preview's requests go: the address of its workspace's container, or why there is none
// (404 deleted, 503 not running). Kept in memory per workspace so a page's requests cost no database
// read or engine inspect each: an entry is dropped on any event of its workspace (started, stopped,
// deleted...), when a request to it fails, and after TTL_MS whatever happens (an event that never
// arrives delays a change by at most that).
import type { Bus } from '../../../platform/bus/bus';
import type { WorkspaceEventPayload } from '../../../platform/bus/subjects';
import { AppError } from '../../../platform/errors';
import type { Clock } from '../../../platform/runtime';
import type { Access } from '../access';
import type { Engine } from '../engine/engine';
import { WorkspaceErrors } from '../workspaces.errors';

const TTL_MS = 1000;

type Target = string | AppError;

export function createPreviewTargets(deps: { access: Pick<Access, 'row'>; engine: Pick<Engine, 'inspect'>; clock: Clock }) {
  const kept = new Map<string, { at: number; target: Target }>();

  async function find(workspaceId: string): Promise<Target> {
    const ws = await deps.access.row(workspaceId);
    if (!ws) return WorkspaceErrors.PREVIEW_NOT_FOUND('no such preview');
    const stopped = () => WorkspaceErrors.PREVIEW_UNAVAILABLE(`the workspace is ${ws.status}; the preview answers once it runs`, { status: ws.status });
    if (ws.status !== 'running' || !ws.containerId) return stopped();
    const state = await deps.engine.inspect(ws.containerId).catch(() => null);
    if (!state?.running || !state.address) return stopped();
    return state.address;
  }

  return {
    /** The container's address on its network, or the error the preview answers. */
    async get(workspaceId: string): Promise<Target> {
      const now = deps.clock.now();
      const hit = kept.get(workspaceId);
      if (hit && now - hit.at < TTL_MS) return hit.target;
      const target = await find(workspaceId);
      kept.set(workspaceId, { at: now, target });
      return target;
    },
    forget(workspaceId: string) {
      kept.delete(workspaceId);
    },
    /** Follows the workspaces' events on the bus; returns the function that stops. */
    listen(bus: Bus): () => void {
      return bus.subscribe<'evt.workspace.started'>('evt.workspace.*', (p: WorkspaceEventPayload) => {
        kept.delete(p.workspace.id);
      });
    },
  };
}

export type PreviewTargets = ReturnType<typeof createPreviewTargets>;
