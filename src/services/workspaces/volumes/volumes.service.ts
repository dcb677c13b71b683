// Kept volumes: a persistent workspace deleted without `volumes=true` leaves its volume, recorded in
// workspaces_retained_volumes and counted against its owner (APP_QUOTA_VOLUMES, checked by the delete
// in lifecycle/). Here the owner lists them and removes them; another actor's kept volume is 404.
import { and, asc, eq, or } from 'drizzle-orm';
import { WorkspaceErrors } from '../workspaces.errors';
import type { Store } from '../../../platform/store';
import { canAccess, type Actor } from '../../../platform/auth/workspace-token';
import { engineFailure } from '../access';
import type { Engine } from '../engine/engine';
import { workspacesTables, type retainedVolumes } from '../workspaces.tables';
import type { KeptVolume } from './volumes.model';

export const volumeNotFound = () => WorkspaceErrors.VOLUME_NOT_FOUND('kept volume not found');

type Row = typeof retainedVolumes.$inferSelect;
const view = (r: Row): KeptVolume => ({ name: r.volume, workspaceId: r.workspaceId, owner: r.owner, deletedAt: r.deletedAt });

export function createVolumes(deps: { store: Store; engine: Engine }) {
  const { engine } = deps;
  const db = deps.store.orm;
  const { retainedVolumes } = workspacesTables(deps.store.dialect);
  const order = [asc(retainedVolumes.deletedAt), asc(retainedVolumes.volume)] as const;

  /** The kept volume named by `ref` (volume name or former workspace id) if `actor` may see it, else 404. */
  async function getOwned(actor: Actor, ref: string): Promise<Row> {
    const [found] = await db
      .select()
      .from(retainedVolumes)
      .where(or(eq(retainedVolumes.volume, ref), eq(retainedVolumes.workspaceId, ref)))
      .limit(1);
    if (!found || !canAccess(actor, found.owner)) throw volumeNotFound();
    return found;
  }

  return {
    /** The actor's kept volumes; an admin sees everyone's, or one actor's with `owner`. */
    async list(actor: Actor, filter: { actor?: string }): Promise<KeptVolume[]> {
      const owner = actor.admin ? filter.actor : actor.id;
      const q = db.select().from(retainedVolumes);
      return (await (owner === undefined ? q : q.where(eq(retainedVolumes.owner, owner))).orderBy(...order)).map(view);
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
      await db.delete(retainedVolumes).where(and(eq(retainedVolumes.volume, row.volume), eq(retainedVolumes.owner, row.owner)));
      return { name: row.volume, workspaceId: row.workspaceId, deleted: true };
    },
  };
}

export type Volumes = ReturnType<typeof createVolumes>;
