// Every query of watch state, on the Store: one upsert per report, the actor's newest rows.
import { and, desc, eq, gt } from 'drizzle-orm';
import type { Store } from '../../../platform/store';
import { progressTables, type ProgressRow } from './progress.tables';

export function createProgressRepository(store: Store) {
  const db = store.orm;
  const { playbackProgress: p } = progressTables(store.dialect);

  return {
    async put(row: ProgressRow): Promise<void> {
      const { actorId: _a, assetId: _b, ...set } = row;
      await db.insert(p).values(row).onConflictDoUpdate({ target: [p.actorId, p.assetId], set });
    },

    /** The actor's rows, newest first; `inProgress`: started and not played. */
    async list(actorId: string, opts: { inProgress: boolean; limit: number }): Promise<ProgressRow[]> {
      const where = opts.inProgress ? and(eq(p.actorId, actorId), gt(p.positionMs, 0), eq(p.played, false)) : eq(p.actorId, actorId);
      return db.select().from(p).where(where).orderBy(desc(p.updatedAt), desc(p.assetId)).limit(opts.limit);
    },
  };
}

export type ProgressRepository = ReturnType<typeof createProgressRepository>;
