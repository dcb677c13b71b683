// Every query of previews, on the Store: the links and the activity row their traffic writes.
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Store } from '../../../platform/store';
import { previewsTables, type PreviewRow } from './previews.tables';

/** A workspace lists at most this many links (newest first). */
const LIST_LIMIT = 500;

export function createPreviewsRepository(store: Store) {
  const db = store.orm;
  const { workspaceActivity, workspacePreviews } = previewsTables(store.dialect);
  // Prepared once: a link's first request reads it by its secret's hash.
  const byHash = db.select().from(workspacePreviews).where(eq(workspacePreviews.tokenHash, sql.placeholder('hash'))).prepare();

  return {
    insert: async (row: PreviewRow) => {
      await db.insert(workspacePreviews).values(row);
    },
    list: (workspaceId: string) =>
      db.select().from(workspacePreviews).where(eq(workspacePreviews.workspaceId, workspaceId)).orderBy(desc(workspacePreviews.createdAt)).limit(LIST_LIMIT),
    find: async (workspaceId: string, id: string): Promise<PreviewRow | undefined> =>
      (await db.select().from(workspacePreviews).where(and(eq(workspacePreviews.id, id), eq(workspacePreviews.workspaceId, workspaceId))))[0],
    byTokenHash: async (hash: string): Promise<PreviewRow | undefined> => (await byHash.execute({ hash }))[0],
    /** Marks the link revoked (once: a second revoke keeps the first time). */
    revoke: async (id: string, at: string) => {
      await db.update(workspacePreviews).set({ revokedAt: at }).where(and(eq(workspacePreviews.id, id), isNull(workspacePreviews.revokedAt)));
    },
    writeActivity: async (workspaceId: string, at: string) => {
      await db.insert(workspaceActivity).values({ workspaceId, lastActivityAt: at }).onConflictDoUpdate({ target: workspaceActivity.workspaceId, set: { lastActivityAt: at } });
    },
  };
}

export type PreviewsRepository = ReturnType<typeof createPreviewsRepository>;
