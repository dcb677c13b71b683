// Local metadata in a scan: what lies beside a medium (.nfo, artwork, sidecar subtitles and their
// signature) is read before the scan's transaction, one listing per folder; the work (and an
// episode's series) is filled inside it, so a scan commits once. The file readers are in
// local-metadata.ts; this module holds the rules (the queries are catalog.repository.ts's).
import { realpathSync } from 'node:fs';
import type { MediaTags } from '../../../platform/bus/media-shapes';
import type { Orm, Store } from '../../../platform/store';
import { createCatalogRepository, type WorkRow } from '../catalog.repository';
import { identify } from '../identify';
import type { KindRegistry } from '../kinds';
import { genreKeyOf, searchTextOf } from '../search';
import { findSidecarSubtitles, localSignature, readLocalMetadata, type FolderCache, type LocalMetadata } from './local-metadata';

type Tx = Orm;

export function createLocalMetadata(deps: { store: Store; mediaRoots: string[]; kinds: KindRegistry }) {
  const rows = createCatalogRepository(deps.store);

  /** Fills a work from what was found beside its medium: found values replace, absent ones leave what is there. */
  async function applyLocal(tx: Tx, w: WorkRow, meta: LocalMetadata, now: number): Promise<void> {
    const next = {
      title: meta.title ?? w.title,
      originalTitle: meta.originalTitle ?? w.originalTitle,
      year: meta.year ?? w.year,
      overview: meta.overview ?? w.overview,
      genres: meta.genres ?? w.genres,
      poster: meta.poster ?? w.poster,
      backdrop: meta.backdrop ?? w.backdrop,
    };
    const fields = { ...next, searchText: searchTextOf(next.title, next.originalTitle), genreKey: genreKeyOf(next.genres) };
    const same = (Object.keys(fields) as (keyof typeof fields)[]).every((k) => JSON.stringify(w[k]) === JSON.stringify(fields[k]));
    if (same) return;
    await rows.updateWork(tx, w.id, { ...fields, updatedAt: now });
  }

  /** The series above an episode work (episode <- season <- series), if it has one. */
  async function seriesOf(tx: Tx, episodeId: string): Promise<WorkRow | undefined> {
    const season = await rows.parentOf(tx, episodeId, 'has-episode');
    if (!season) return undefined;
    const series = await rows.parentOf(tx, season, 'has-season');
    return series ? rows.work(series, tx) : undefined;
  }

  /** What lies beside a medium, read before the transaction (one listing per folder). */
  function besideOf(root: number, relPath: string, tags: MediaTags | undefined) {
    const folders: FolderCache = new Map();
    let realRoot: string | undefined;
    try {
      realRoot = realpathSync(deps.mediaRoots[root]!);
    } catch {
      return { subtitleFiles: [], localSig: '', metadata: () => null };
    }
    const r = realRoot;
    // The .nfo an episode reads differs from a movie's: read for what the name says, again if the work turns out otherwise.
    const read = new Map<boolean, ReturnType<typeof readLocalMetadata>>();
    const metadata = (episode: boolean) => {
      if (!read.has(episode)) read.set(episode, readLocalMetadata(r, root, relPath, { episode, tags, folders }));
      return read.get(episode)!;
    };
    metadata(identify(relPath, deps.kinds.plugins)?.kind === 'episode');
    return { subtitleFiles: findSidecarSubtitles(r, relPath, folders), localSig: localSignature(r, relPath, folders), metadata };
  }

  /** Reads the .nfo, artwork and tags of a medium into its work (and an episode's series), in the scan's transaction. */
  async function fillWork(tx: Tx, workId: string, beside: ReturnType<typeof besideOf>, now: number) {
    const work = await rows.work(workId, tx);
    if (!work) return;
    const found = beside.metadata(work.kind === 'episode');
    if (!found) return;
    await applyLocal(tx, work, found.work, now);
    if (found.series) {
      const series = await seriesOf(tx, workId);
      if (series) await applyLocal(tx, series, found.series, now);
    }
  }

  return { besideOf, fillWork };
}

export type LocalMetadataService = ReturnType<typeof createLocalMetadata>;
