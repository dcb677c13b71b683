// Every query of the sources service: the bindings of assets to the files they are read from.
import { desc, eq, lte } from 'drizzle-orm';
import { newId, type Clock } from '../../platform/runtime';
import type { Store } from '../../platform/store';
import { sourcesTables, type sourcesBindings } from './sources.tables';

export type BindingRow = typeof sourcesBindings.$inferSelect;

export function createSourcesRepository(store: Store, clock: Clock) {
  const db = store.orm;
  const { sourcesBindings } = sourcesTables(store.dialect);
  return {
    /** Records what an event says about a file, unless the binding already holds newer news (one statement: concurrent events need no lock). */
    async record(assetId: string, root: number, path: string, available: boolean, at: number): Promise<void> {
      const now = clock.now();
      await db
        .insert(sourcesBindings)
        .values({ id: newId('bnd', clock), assetId, kind: 'file', root, path, available, checkedAt: at, preference: 0, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({
          target: [sourcesBindings.assetId, sourcesBindings.kind, sourcesBindings.root, sourcesBindings.path],
          set: { available, checkedAt: at, updatedAt: now },
          setWhere: lte(sourcesBindings.checkedAt, at),
        });
    },
    /** The asset's best binding: available before unavailable, then the higher preference, then the most recently checked. */
    async best(assetId: string): Promise<BindingRow | undefined> {
      const [best] = await db
        .select()
        .from(sourcesBindings)
        .where(eq(sourcesBindings.assetId, assetId))
        .orderBy(desc(sourcesBindings.available), desc(sourcesBindings.preference), desc(sourcesBindings.checkedAt))
        .limit(1);
      return best;
    },
  };
}
