// Answers qry.catalog.playable: an asset's MediaIndex facts and keyframe index, which the playback
// service cuts its HLS segments at. Read-only; the playback service never reads catalog tables.
import type { Bus } from '../../platform/bus/bus';
import type { BusQueries } from '../../platform/bus/subjects';
import type { Store } from '../../platform/store';
import { createCatalogRepository } from './catalog.repository';
import { iso6392 } from './metadata/languages';
import { CatalogErrors, catalogErrorTable } from './catalog.errors';

type Playable = BusQueries['qry.catalog.playable'];

export function createPlayableAnswerer(deps: { store: Store }) {
  const rows = createCatalogRepository(deps.store);
  async function playable(req: Playable['request']): Promise<Playable['reply']> {
    if (typeof req?.assetId !== 'string' || req.assetId.length < 1 || req.assetId.length > 128) {
      throw CatalogErrors.CATALOG_REQUEST_INVALID('qry.catalog.playable needs an assetId of 1 to 128 characters');
    }
    const row = await rows.playable(req.assetId);
    const none = { assetId: req.assetId, container: '', durationMs: 0, bitrateBps: 0, keyframesMs: [], streams: [], subtitleFiles: [] };
    if (!row) return { ...none, found: false, indexed: false };
    if (!row.index) return { ...none, container: row.asset.container, found: true, indexed: false };
    const i = row.index;
    return {
      assetId: req.assetId, found: true, indexed: true, container: i.container, durationMs: i.durationMs,
      bitrateBps: i.bitrateBps, keyframesMs: i.keyframesMs,
      streams: i.streams.map((s) => ({ ...s, language: iso6392(s.language) })),
      subtitleFiles: row.asset.subtitleFiles,
    };
  }
  return { playable, listen: (bus: Bus) => bus.answer('qry.catalog.playable', playable, catalogErrorTable) };
}
