// The authority for SourceBinding: bindings follow the catalog's events (an indexed asset is
// readable at its file; a library scan finds a file gone or back) and qry.sources.resolve answers
// the best binding of an asset. Rules (docs/library.md): available before unavailable, then the
// higher preference, then the most recently checked.
import { desc, eq, lte } from 'drizzle-orm';
import type { Bus } from '../../platform/bus/bus';
import type { BusEvents, BusQueries, SourceBinding } from '../../platform/bus/subjects';
import { newId, type Clock } from '../../platform/runtime';
import type { Store } from '../../platform/store';
import { sourcesTables, type sourcesBindings } from './sources.tables';
import { SourcesErrors, sourcesErrorTable } from './sources.errors';

type Row = typeof sourcesBindings.$inferSelect;

const toBinding = (r: Row): SourceBinding => ({
  id: r.id, assetId: r.assetId, kind: 'file', root: r.root, path: r.path, available: r.available, checkedAt: r.checkedAt,
});

export const badResolve = () => SourcesErrors.SOURCES_REQUEST_INVALID('qry.sources.resolve needs an assetId of 1 to 128 characters');

export function createSources(deps: { store: Store; clock: Clock }) {
  const { clock } = deps;
  const db = deps.store.orm;
  const { sourcesBindings } = sourcesTables(deps.store.dialect);

  /** Records what an event says about a file, unless the binding already holds newer news (one statement: concurrent events need no lock). */
  async function record(assetId: string, root: number, path: string, available: boolean, at: number) {
    const now = clock.now();
    await db
      .insert(sourcesBindings)
      .values({ id: newId('bnd', clock), assetId, kind: 'file', root, path, available, checkedAt: at, preference: 0, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [sourcesBindings.assetId, sourcesBindings.kind, sourcesBindings.root, sourcesBindings.path],
        set: { available, checkedAt: at, updatedAt: now },
        setWhere: lte(sourcesBindings.checkedAt, at),
      });
  }

  const onIndexed = (e: BusEvents['evt.catalog.assetIndexed']) => record(e.assetId, e.root, e.path, true, e.at);
  const onAvailability = (e: BusEvents['evt.catalog.assetAvailability']) => record(e.assetId, e.root, e.path, e.available, e.at);

  async function resolve(req: BusQueries['qry.sources.resolve']['request']): Promise<BusQueries['qry.sources.resolve']['reply']> {
    const assetId = req?.assetId;
    if (typeof assetId !== 'string' || assetId.length < 1 || assetId.length > 128) throw badResolve();
    const [best] = await db
      .select()
      .from(sourcesBindings)
      .where(eq(sourcesBindings.assetId, assetId))
      .orderBy(desc(sourcesBindings.available), desc(sourcesBindings.preference), desc(sourcesBindings.checkedAt))
      .limit(1);
    return { assetId, available: best?.available ?? false, binding: best ? toBinding(best) : null };
  }

  /** Follows the catalog's durable events and answers resolution; returns the function that stops both. */
  function listen(bus: Bus): () => void {
    const offs = [
      bus.consume('sources-bindings', 'evt.catalog.assetIndexed', onIndexed),
      bus.consume('sources-bindings', 'evt.catalog.assetAvailability', onAvailability),
      bus.answer('qry.sources.resolve', resolve, sourcesErrorTable),
    ];
    return () => offs.forEach((off) => off());
  }

  return { resolve, onIndexed, onAvailability, listen };
}
