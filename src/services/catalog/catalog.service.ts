// Catalog rules, free of HTTP: scan (probe over the bus, identify, file under an edition, index),
// and the reads of works, their assets and relations. Errors are AppErrors with stable codes.
import type { Bus } from '../../platform/bus/bus';
import { createEventOutbox } from '../../platform/bus/event-outbox';
import type { ProbeStream } from '../../platform/bus/media-shapes';
import type { BusQueries } from '../../platform/bus/subjects';
import type { Orm, Store } from '../../platform/store';
import { AppError } from '../../platform/errors';
import { CatalogErrors } from './catalog.errors';
import { newId, type Clock, type Logger } from '../../platform/runtime';
import type { Asset, AssetSummary, ImageKind, MediaIndex, Relation, ScanInput, Work, WorksFilter } from './catalog.model';
import type { ImageEngine } from './media-engine/images';
import { IMAGE_TYPES } from './media-engine/images';
import { SIDECAR_EXTENSIONS } from './metadata/local-metadata';
import { createLocalMetadata } from './metadata/metadata.service';
import { audioOf, subtitlesOf } from './metadata/tracks';
import { searchTextOf } from './search';
import { createCatalogRepository, type AssetRow, type IndexRow, type RelationRow, type WorkRow } from './catalog.repository';
import { identify, type Identified } from './identify';
import { createWorksPager } from './works-pager';
import type { KindRegistry } from './kinds';
import { locate, pathRefused, resolveOnRoot } from './paths';

// A 4xx AppError is not retryable and permanent unless it says otherwise.
export const workNotFound = () => CatalogErrors.CATALOG_WORK_NOT_FOUND('No such work');
export const editionNotFound = () => CatalogErrors.CATALOG_EDITION_NOT_FOUND('No such edition');
export const bindingConflict = () => CatalogErrors.CATALOG_BINDING_CONFLICT('The edition does not belong to the work');
export const imageNotFound = () => CatalogErrors.CATALOG_IMAGE_NOT_FOUND('The work has no image of that kind');
export const imageUnreadable = () => CatalogErrors.CATALOG_IMAGE_UNREADABLE('The image could not be read');

export interface CatalogDeps {
  store: Store;
  bus: Bus;
  clock: Clock;
  log: Logger;
  mediaRoots: string[];
  kinds: KindRegistry;
  /** How long scan waits for the media engine (probe timeout plus the keyframe scan). */
  probeWaitMs: number;
  /** Covers and resized images (ffmpeg, cached). */
  images: ImageEngine;
}

type Tx = Orm;

/** A work row as the API shows it (also the read-path bench's stage profile). */
export const toWork = (r: WorkRow): Work => ({
  id: r.id, kind: r.kind, title: r.title, originalTitle: r.originalTitle, year: r.year, overview: r.overview, genres: r.genres,
  images: { poster: r.poster ? `/works/${r.id}/images/poster` : null, backdrop: r.backdrop ? `/works/${r.id}/images/backdrop` : null },
  createdAt: r.createdAt, updatedAt: r.updatedAt,
});

const toAsset = (r: AssetRow): Asset => ({
  id: r.id, editionId: r.editionId, path: r.path, container: r.container, fastHash: r.fastHash, sizeBytes: r.sizeBytes,
  identification: r.identification, kind: r.kind, layout: r.layout, createdAt: r.createdAt, updatedAt: r.updatedAt,
});
const toIndex = (r: IndexRow): MediaIndex => ({
  id: r.id, assetId: r.assetId, container: r.container, bitrateBps: r.bitrateBps, durationMs: r.durationMs,
  capabilities: r.capabilities, keyframesMs: r.keyframesMs, indexVersion: r.indexVersion, createdAt: r.createdAt,
  streams: r.streams,
});

/** `[1, 3]` -> `000001.000003`: text order equals ordinal order, parents before children. */
export const ordinalKey = (ordinal: number[]) => ordinal.map((n) => String(n).padStart(6, '0')).join('.');

/** Facets of an asset, from its index. */
export function facetsOf(streams: ProbeStream[]): string[] {
  const f: string[] = [];
  const video = streams.filter((s) => s.type === 'video');
  if (video.length) f.push('video');
  if (streams.some((s) => s.type === 'audio')) f.push('audio');
  if (streams.some((s) => s.type === 'subtitle')) f.push('subtitles');
  const height = Math.max(0, ...video.map((s) => s.height ?? 0));
  if (height >= 720) f.push('hd');
  if (height >= 2160) f.push('4k');
  if (streams.some((s) => s.type === 'audio' && (s.channels ?? 0) > 2)) f.push('surround');
  return f;
}

export function createCatalog(deps: CatalogDeps) {
  const { store, clock } = deps;
  const rows = createCatalogRepository(store);
  const local = createLocalMetadata({ store, mediaRoots: deps.mediaRoots, kinds: deps.kinds });
  const events = createEventOutbox({ db: store.orm, table: rows.eventOutbox, bus: deps.bus, clock, log: deps.log });

  const findWork = (id: string): Promise<WorkRow | undefined> => rows.work(id);

  /** Finds the work with `key`, or makes it. */
  async function ensureWork(tx: Tx, key: string, kind: string, title: string, year: number, now: number): Promise<WorkRow> {
    const found = await rows.workByMatchKey(tx, key);
    if (found) return found;
    const row: WorkRow = {
      id: newId('wrk', clock), kind, title, originalTitle: title, year, matchKey: key, overview: '', genres: [],
      searchText: searchTextOf(title, title), genreKey: '', poster: null, backdrop: null, createdAt: now, updatedAt: now,
    };
    await rows.insertWork(tx, row);
    return row;
  }

  async function ensureRelation(tx: Tx, parent: string, child: string, rel: string, ordinal: number[], now: number) {
    await rows.insertRelation(tx, { parentWorkId: parent, childWorkId: child, rel, ordinal, ordinalKey: ordinalKey(ordinal), createdAt: now });
  }

  async function ensureEdition(tx: Tx, workId: string, kind: string, now: number): Promise<string> {
    const found = await rows.editionOf(tx, workId, kind);
    if (found) return found;
    const id = newId('edn', clock);
    await rows.insertEdition(tx, { id, workId, kind, createdAt: now, updatedAt: now });
    return id;
  }

  /** Files an identified name: the work, for an episode its series and season with their relations, and the edition. */
  async function fileIdentified(tx: Tx, idf: Identified, now: number): Promise<string> {
    if (!idf.episode) return ensureEdition(tx, (await ensureWork(tx, idf.key, idf.kind, idf.title, idf.year, now)).id, idf.editionKind, now);
    const { seriesKey, seriesTitle, season, episode } = idf.episode;
    const series = await ensureWork(tx, seriesKey, 'series', seriesTitle, idf.year, now);
    const seasonWork = await ensureWork(tx, `${seriesKey}|s${season}`, 'season', `${seriesTitle} Season ${season}`, 0, now);
    const work = await ensureWork(tx, idf.key, idf.kind, idf.title, idf.year, now);
    await ensureRelation(tx, series.id, seasonWork.id, 'has-season', [season], now);
    await ensureRelation(tx, seasonWork.id, work.id, 'has-episode', [season, episode], now);
    return ensureEdition(tx, work.id, idf.editionKind, now);
  }

  /** A new workless edition, for an asset nothing identifies. */
  async function unidentifiedEdition(tx: Tx, now: number): Promise<string> {
    const id = newId('edn', clock);
    await rows.insertEdition(tx, { id, workId: null, kind: 'unidentified', createdAt: now, updatedAt: now });
    return id;
  }

  /** Checks the explicit binding of the body before any work is done. */
  async function checkBinding(input: ScanInput): Promise<{ editionId?: string; workId?: string } | null> {
    if (!input.editionId && !input.workId) return null;
    if (input.workId && !(await findWork(input.workId))) throw workNotFound();
    if (input.editionId) {
      const ed = await rows.edition(input.editionId);
      if (!ed || ed.workId === null) throw editionNotFound();
      if (input.workId && ed.workId !== input.workId) throw bindingConflict();
    }
    return { editionId: input.editionId, workId: input.workId };
  }

  async function scan(input: ScanInput): Promise<{ asset: Asset; index: MediaIndex | null; indexed: boolean }> {
    const loc = locate(deps.mediaRoots, input.path, input.root);
    const ext = loc.relPath.slice(loc.relPath.lastIndexOf('.') + 1).toLowerCase();
    if (loc.relPath.includes('.') && SIDECAR_EXTENSIONS.has(ext)) throw pathRefused('it is a subtitle, .nfo or image file, read with the medium beside it');
    const binding = await checkBinding(input);
    const probe: BusQueries['qry.media.probe']['reply'] = await deps.bus.request(
      'qry.media.probe',
      { root: loc.root, path: loc.relPath },
      { timeoutMs: deps.probeWaitMs },
    );
    const beside = local.besideOf(loc.root, loc.relPath, probe.medium ? probe.tags : undefined);

    const result = await rows.transaction(async (tx) => {
      const now = clock.now();
      const existing = await rows.assetAt(tx, loc.root, loc.relPath);
      const oldIndex = existing ? await rows.indexOf(tx, existing.id) : undefined;
      const replaced = !!existing && (existing.fastHash !== probe.fastHash || existing.sizeBytes !== probe.sizeBytes);

      // Where the asset is filed: an explicit binding, else where it already is (an identified asset,
      // or any file that is not a medium now), else where its name says, else a workless edition.
      const bound = binding?.editionId ?? (binding?.workId ? await ensureEdition(tx, binding.workId, 'standard', now) : undefined);
      let editionId: string;
      if (bound) editionId = bound;
      else if (existing && (existing.identification === 'identified' || !probe.medium)) editionId = existing.editionId;
      else {
        const idf = probe.medium ? identify(loc.relPath, deps.kinds.plugins) : null;
        editionId = idf ? await fileIdentified(tx, idf, now) : (existing?.editionId ?? (await unidentifiedEdition(tx, now)));
      }
      const workId = await rows.workOfEdition(tx, editionId);
      // Identified means: a medium filed under a work. Every non-medium is unidentified, even when bound.
      const identification: Asset['identification'] = probe.medium && workId !== null ? 'identified' : 'unidentified';
      // The .nfo, artwork and tags fill the work in the same transaction: no second commit per file.
      if (probe.medium && workId !== null) await local.fillWork(tx, workId, beside, now);

      const fields = {
        editionId,
        container: probe.medium ? probe.facts.container : 'unknown',
        fastHash: probe.fastHash,
        sizeBytes: probe.sizeBytes,
        identification,
        kind: probe.medium ? 'logical-composition' : 'opaque',
        layout: 'file',
        subtitleFiles: probe.medium ? beside.subtitleFiles : [],
        localSig: beside.localSig,
      };
      let asset: AssetRow;
      if (existing) {
        const changed = Object.entries(fields).some(([k, v]) => JSON.stringify((existing as Record<string, unknown>)[k]) !== JSON.stringify(v));
        asset = { ...existing, ...fields, updatedAt: changed ? now : existing.updatedAt };
        if (changed) await rows.updateAsset(tx, existing.id, { ...fields, updatedAt: now });
        // A workless edition left without assets goes with its last asset.
        if (existing.editionId !== editionId) await rows.dropEmptyWorklessEdition(tx, existing.editionId);
      } else {
        asset = { id: newId('ast', clock), root: loc.root, path: loc.relPath, ...fields, createdAt: now, updatedAt: now };
        await rows.insertAsset(tx, asset);
      }

      let index: IndexRow | undefined;
      if (!probe.medium) {
        if (oldIndex) await rows.deleteIndex(tx, oldIndex.id);
      } else {
        const f = probe.facts;
        const facts = {
          container: f.container, bitrateBps: f.bitrateBps, durationMs: f.durationMs, capabilities: f.capabilities,
          keyframesMs: f.keyframesMs, keyframeSource: f.keyframeSource, streams: f.streams,
        };
        const sameFacts = oldIndex && (Object.keys(facts) as (keyof typeof facts)[]).every((k) => JSON.stringify(oldIndex[k]) === JSON.stringify(facts[k]));
        if (oldIndex && sameFacts) index = oldIndex; // nothing learnt: the index stands as it is
        else if (oldIndex) {
          index = { ...oldIndex, ...facts, indexVersion: oldIndex.indexVersion + 1, createdAt: now };
          await rows.updateIndex(tx, oldIndex.id, index);
        } else {
          index = { id: newId('idx', clock), assetId: asset.id, ...facts, indexVersion: 1, createdAt: now };
          await rows.insertIndex(tx, index);
        }
      }
      // The event is written with the asset it names (the outbox), so a crash right after the commit
      // cannot leave an indexed asset that the sources never hear of; the relay sends it once committed.
      if (index) {
        await events.record(tx, 'evt.catalog.assetIndexed', {
          assetId: asset.id,
          editionId: asset.editionId,
          workId,
          root: loc.root,
          path: loc.relPath,
          identification: asset.identification,
          indexed: true,
          indexVersion: index.indexVersion,
          replaced,
          container: index.container,
          durationMs: index.durationMs,
          fastHash: asset.fastHash,
          capabilities: index.capabilities,
          at: clock.now(),
        });
      }
      return { asset, index, replaced, workId };
    });
    events.kick();

    return { asset: toAsset(result.asset), index: result.index ? toIndex(result.index) : null, indexed: !!result.index };
  }

  // GET /works is the hot read: pages seek from sparse marks (works-pager.ts), not an OFFSET walk.
  const works = createWorksPager(store);

  async function listWorks(page: number, pageSize: number, filter: WorksFilter = {}): Promise<{ total: number; works: Work[] }> {
    if (!rows.filters(filter)) {
      const found = await works.page(page, pageSize);
      return { total: found.total, works: found.rows.map(toWork) };
    }
    // A query or genre of no letters or digits finds nothing, rather than everything (null).
    const found = await rows.filteredWorks(filter, page, pageSize);
    return found ? { total: found.total, works: found.rows.map(toWork) } : { total: 0, works: [] };
  }

  /** A work's image: the file as it is, or (resized, or an embedded cover) a cached JPEG. */
  async function workImage(id: string, kind: ImageKind, width?: number): Promise<{ path: string; type: string }> {
    const w = await findWork(id);
    if (!w) throw workNotFound();
    const ref = kind === 'poster' ? w.poster : w.backdrop;
    if (!ref) throw imageNotFound();
    let abs: string;
    try {
      const resolved = resolveOnRoot(deps.mediaRoots, ref.root, ref.path);
      if (!resolved) throw imageNotFound();
      abs = resolved.absPath;
    } catch (e) {
      if (e instanceof AppError && e.code === 'CATALOG_IMAGE_NOT_FOUND') throw e;
      throw imageNotFound();
    }
    if (ref.stream !== undefined) return { path: await deps.images.cover(abs, ref.stream, width), type: 'image/jpeg' };
    if (width !== undefined) return { path: await deps.images.resized(abs, width), type: 'image/jpeg' };
    const type = IMAGE_TYPES[abs.slice(abs.lastIndexOf('.') + 1).toLowerCase()];
    if (!type) throw imageUnreadable();
    return { path: abs, type };
  }

  /** Works written before search existed get their search column once (folded in code, as at write time). */
  async function backfillSearch(): Promise<void> {
    for (;;) {
      const batch = await rows.worksWithoutSearch(500);
      if (batch.length === 0) return;
      for (const r of batch) await rows.updateWork(store.orm, r.id, { searchText: searchTextOf(r.title, r.originalTitle) || ' ' });
    }
  }

  async function getWork(id: string): Promise<Work> {
    const w = await findWork(id);
    if (!w) throw workNotFound();
    return toWork(w);
  }

  async function workAssets(id: string): Promise<AssetSummary[]> {
    if (!(await findWork(id))) throw workNotFound();
    return (await rows.workAssets(id)).map(({ asset, index, available }) => ({
      assetId: asset.id,
      editionId: asset.editionId,
      container: asset.container,
      durationMs: index?.durationMs ?? 0,
      facets: index ? facetsOf(index.streams) : [],
      audio: index ? audioOf(index.streams) : [],
      subtitles: index ? subtitlesOf(index.streams, asset.subtitleFiles) : [],
      identification: asset.identification,
      indexed: !!index,
      layout: asset.layout,
      sizeBytes: asset.sizeBytes,
      // A file no library scan has looked at is as available as POST /scan found it.
      available: available ?? true,
    }));
  }

  /** The work's lineage: relations up to its root and down through its descendants, by ordinal. */
  async function workRelations(id: string): Promise<Relation[]> {
    if (!(await findWork(id))) throw workNotFound();
    // Keyed as catalog_relations_pair is unique, so a relation met twice is listed once.
    const found = new Map<string, RelationRow>();
    // Up: a season or an episode shows where it sits. Down: a series lists its seasons and their episodes.
    for (const [from, to] of [['childWorkId', 'parentWorkId'], ['parentWorkId', 'childWorkId']] as const) {
      let cursor = [id];
      for (let depth = 0; depth < 8 && cursor.length; depth++) {
        const met = await rows.relationsOf(from, cursor);
        for (const r of met) found.set(`${r.parentWorkId}|${r.childWorkId}|${r.rel}`, r);
        cursor = met.map((r) => r[to]);
      }
    }
    const out = [...found.values()];
    out.sort((a, b) => (a.ordinalKey < b.ordinalKey ? -1 : a.ordinalKey > b.ordinalKey ? 1 : a.rel < b.rel ? -1 : 1));
    return out.map((r) => ({ parentWorkId: r.parentWorkId, childWorkId: r.childWorkId, rel: r.rel, ordinal: r.ordinal, createdAt: r.createdAt }));
  }

  return {
    scan,
    listWorks,
    workImage,
    backfillSearch,
    getWork,
    workAssets,
    workRelations,
    kinds: () => deps.kinds.all(),
    /** Relays the events a previous run left unsent, then each new one. */
    startEvents: () => events.start(),
    stopEvents: () => events.stop(),
  };
}

export type CatalogService = ReturnType<typeof createCatalog>;
