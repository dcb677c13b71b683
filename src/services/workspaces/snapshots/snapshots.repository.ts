// Every query of the snapshots: their rows, the quota's count and insert, and which snapshots
// workspaces were made from (the workspaces table, read only).
import { asc, count, eq, isNotNull, sql } from 'drizzle-orm';
import type { Orm, Store } from '../../../platform/store';
import { workspacesTables, type SnapshotRow } from '../workspaces.tables';

export function createSnapshotsRepository(store: Store) {
  const db = store.orm;
  const { snapshots, workspaces } = workspacesTables(store.dialect);
  const byId = db.select().from(snapshots).where(eq(snapshots.id, sql.placeholder('id'))).prepare();
  const countOf = async (owner: string, tx: Orm = db) => (await tx.select({ n: count() }).from(snapshots).where(eq(snapshots.owner, owner)))[0]?.n ?? 0;

  return {
    get: async (id: string): Promise<SnapshotRow | undefined> => (await byId.execute({ id }))[0],
    /** The owner's snapshots (every one with no owner given), oldest first. */
    list(owner?: string): Promise<SnapshotRow[]> {
      const q = db.select().from(snapshots);
      return (owner === undefined ? q : q.where(eq(snapshots.owner, owner))).orderBy(asc(snapshots.createdAt), asc(snapshots.id));
    },
    countOf: (owner: string) => countOf(owner),
    /**
     * Inserts `row` unless its owner holds `limit` snapshots already (null then; no limit: always),
     * counted under the owner's lock in the insert's transaction, so two inserts at once cannot overshoot.
     */
    insertWithin: (row: SnapshotRow, limit: number | null): Promise<SnapshotRow | null> =>
      store.transaction(async (tx) => {
        await store.lock(tx, `snapshots-quota:${row.owner}`);
        if (limit !== null && (await countOf(row.owner, tx)) >= limit) return null;
        const [inserted] = await tx.insert(snapshots).values(row).returning();
        return inserted!;
      }),
    async delete(id: string): Promise<void> {
      await db.delete(snapshots).where(eq(snapshots.id, id));
    },
    /** Whether a workspace made from the snapshot still exists. */
    inUse: async (id: string) => (await db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.snapshotId, id)).limit(1)).length > 0,
    /** Ids of the snapshots workspaces were made from (listed or deleted). */
    inUseIds: async () =>
      new Set((await db.selectDistinct({ id: workspaces.snapshotId }).from(workspaces).where(isNotNull(workspaces.snapshotId))).map((r) => r.id!)),
  };
}

export type SnapshotsRepository = ReturnType<typeof createSnapshotsRepository>;
