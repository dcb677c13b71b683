// Kept volumes: a persistent workspace deleted without `volumes=true` leaves its volume, recorded in
// workspaces_retained_volumes and counted against its owner (APP_QUOTA_VOLUMES, checked by the delete
// in lifecycle/). Here the owner lists them and removes them; another actor's kept volume is 404.
import { WorkspaceErrors } from '../workspaces.errors';
import type { Store } from '../../../platform/store';
import { canAccess, type Actor } from '../../../platform/auth/workspace-token';
import { engineFailure } from '../access';
import type { Engine } from '../engine/engine';
import { createVolumesRepository, type KeptVolumeRow as Row } from './volumes.repository';
import type { KeptVolume } from './volumes.model';

export const volumeNotFound = () => WorkspaceErrors.VOLUME_NOT_FOUND('kept volume not found');

const view = (r: Row): KeptVolume => ({ name: r.volume, workspaceId: r.workspaceId, owner: r.owner, deletedAt: r.deletedAt });

export function createVolumes(deps: { store: Store; engine: Engine }) {
  const { engine } = deps;
  const kept = createVolumesRepository(deps.store);

  /** The kept volume named by `ref` (volume name or former workspace id) if `actor` may see it, else 404. */
  async function getOwned(actor: Actor, ref: string): Promise<Row> {
    const found = await kept.byRef(ref);
    if (!found || !canAccess(actor, found.owner)) throw volumeNotFound();
    return found;
  }

  return {
    /** The actor's kept volumes; an admin sees everyone's, or one actor's with `owner`. */
    async list(actor: Actor, filter: { actor?: string }): Promise<KeptVolume[]> {
      const owner = actor.admin ? filter.actor : actor.id;
      return (await kept.list(owner)).map(view);
    },

    /**
     * Removes the volume from the engine, then its record (which frees its place in the quota). A
     * volume already gone from the engine counts as removed; one the engine refuses to remove stays
     * listed and counted (502 ENGINE_ERROR).
     */
    async remove(actor: Actor, ref: string): Promise<{ name: string; workspaceId: string; deleted: true }> {
      const row = await getOwned(actor, ref);
      try {
        await engine.removeVolume(row.volume);
      } catch (e) {
        throw engineFailure(e);
      }
      await kept.delete(row.volume, row.owner);
      return { name: row.volume, workspaceId: row.workspaceId, deleted: true };
    },
  };
}

export type Volumes = ReturnType<typeof createVolumes>;
