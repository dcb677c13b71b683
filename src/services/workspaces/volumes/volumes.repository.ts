// Every query of the kept volumes (workspaces_retained_volumes); the lifecycle's delete writes them.
import { and, asc, eq, or } from 'drizzle-orm';
import type { Store } from '../../../platform/store';
import { workspacesTables, type retainedVolumes } from '../workspaces.tables';

export type KeptVolumeRow = typeof retainedVolumes.$inferSelect;

export function createVolumesRepository(store: Store) {
  const db = store.orm;
  const { retainedVolumes } = workspacesTables(store.dialect);
  const order = [asc(retainedVolumes.deletedAt), asc(retainedVolumes.volume)] as const;
  return {
    /** The kept volume named by `ref`: its volume name or its former workspace's id. */
    byRef: async (ref: string): Promise<KeptVolumeRow | undefined> =>
      (await db.select().from(retainedVolumes).where(or(eq(retainedVolumes.volume, ref), eq(retainedVolumes.workspaceId, ref))).limit(1))[0],
    /** The owner's kept volumes (everyone's without one), oldest deletes first. */
    list(owner?: string): Promise<KeptVolumeRow[]> {
      const q = db.select().from(retainedVolumes);
      return (owner === undefined ? q : q.where(eq(retainedVolumes.owner, owner))).orderBy(...order);
    },
    async delete(volume: string, owner: string): Promise<void> {
      await db.delete(retainedVolumes).where(and(eq(retainedVolumes.volume, volume), eq(retainedVolumes.owner, owner)));
    },
  };
}
