// The queries of access.ts: a workspace's row by id, and the engine recorded for a container or a
// volume. Prepared once: every request reads a workspace by id (building drizzle SQL per call costs
// more than running it).
import { eq, sql } from 'drizzle-orm';
import type { Store } from '../../platform/store';
import { workspacesTables, type WorkspaceRow } from './workspaces.tables';

export function createAccessRepository(store: Store) {
  const { workspaces } = workspacesTables(store.dialect);
  const db = store.orm;
  const byId = db.select().from(workspaces).where(eq(workspaces.id, sql.placeholder('id'))).prepare();
  const byContainer = db.select({ engine: workspaces.engine }).from(workspaces).where(eq(workspaces.containerId, sql.placeholder('id'))).prepare();
  const byVolume = db.select({ engine: workspaces.engine }).from(workspaces).where(eq(workspaces.volume, sql.placeholder('name'))).prepare();
  return {
    row: async (id: string): Promise<WorkspaceRow | undefined> => (await byId.execute({ id }))[0],
    /** A name, null (the first engine), undefined when no workspace has the container. */
    engineOfContainer: async (id: string): Promise<string | null | undefined> => (await byContainer.execute({ id }))[0]?.engine,
    engineOfVolume: async (name: string): Promise<string | null | undefined> => (await byVolume.execute({ name }))[0]?.engine,
  };
}
