// The authority for SourceBinding: bindings follow the catalog's events (an indexed asset is
// readable at its file; a library scan finds a file gone or back) and qry.sources.resolve answers
// the best binding of an asset. Rules (docs/library.md): available before unavailable, then the
// higher preference, then the most recently checked.
import type { Bus } from '../../platform/bus/bus';
import type { BusEvents, BusQueries, SourceBinding } from '../../platform/bus/subjects';
import type { Clock } from '../../platform/runtime';
import type { Store } from '../../platform/store';
import { createSourcesRepository, type BindingRow } from './sources.repository';
import { SourcesErrors, sourcesErrorTable } from './sources.errors';

const toBinding = (r: BindingRow): SourceBinding => ({
  id: r.id, assetId: r.assetId, kind: 'file', root: r.root, path: r.path, available: r.available, checkedAt: r.checkedAt,
});

export const badResolve = () => SourcesErrors.SOURCES_REQUEST_INVALID('qry.sources.resolve needs an assetId of 1 to 128 characters');

export function createSources(deps: { store: Store; clock: Clock }) {
  const bindings = createSourcesRepository(deps.store, deps.clock);
  const record = bindings.record;

  const onIndexed = (e: BusEvents['evt.catalog.assetIndexed']) => record(e.assetId, e.root, e.path, true, e.at);
  const onAvailability = (e: BusEvents['evt.catalog.assetAvailability']) => record(e.assetId, e.root, e.path, e.available, e.at);

  async function resolve(req: BusQueries['qry.sources.resolve']['request']): Promise<BusQueries['qry.sources.resolve']['reply']> {
    const assetId = req?.assetId;
    if (typeof assetId !== 'string' || assetId.length < 1 || assetId.length > 128) throw badResolve();
    const best = await bindings.best(assetId);
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
