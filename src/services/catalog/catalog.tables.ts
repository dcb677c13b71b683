// Tables the catalog owns: Work -> Edition -> MediaAsset (+ its MediaIndex), and Work relations.
import { defineTables } from '../../platform/db-schema';
import type { Identification, KeyframeSource, ProbeStream } from '../../platform/bus/media-shapes';
import { eventOutboxTable } from '../../platform/bus/outbox-table';
import type { ImageRef, SidecarSubtitle } from './metadata/local-metadata';

export const catalogTables = defineTables((t) => {
  const { index, integer, table, text, uniqueIndex } = t;
  const catalogWorks = table(
    'catalog_works',
    {
      id: text('id').primaryKey(),
      kind: text('kind').notNull(),
      title: text('title').notNull(),
      originalTitle: text('original_title').notNull(),
      year: integer('year').notNull(),
      /** Find-or-create key of identified works (e.g. `movie|the matrix|1999`); null for works made otherwise. */
      matchKey: text('match_key'),
      /** From a local .nfo or the file's tags; '' when none says. */
      overview: text('overview').notNull().default(''),
      genres: text('genres', { mode: 'json' }).$type<string[]>().notNull().default([]),
      /** Folded words of title and original title, each after a space (search.ts): what `q` matches. */
      searchText: text('search_text').notNull().default(''),
      /** `|genre|genre|` folded: what `genre` matches. */
      genreKey: text('genre_key').notNull().default(''),
      /** Where the images are (a file beside a medium, or a cover inside one); null: none. */
      poster: text('poster', { mode: 'json' }).$type<ImageRef>(),
      backdrop: text('backdrop', { mode: 'json' }).$type<ImageRef>(),
      createdAt: integer('created_at').notNull(),
      updatedAt: integer('updated_at').notNull(),
    },
    (t) => [uniqueIndex('catalog_works_match_key').on(t.matchKey), index('catalog_works_created').on(t.createdAt, t.id), index('catalog_works_kind_year').on(t.kind, t.year)],
  );

  const catalogEditions = table(
    'catalog_editions',
    {
      id: text('id').primaryKey(),
      /** Null for the edition of an unidentified asset. */
      workId: text('work_id').references(() => catalogWorks.id, { onDelete: 'cascade' }),
      kind: text('kind').notNull(),
      createdAt: integer('created_at').notNull(),
      updatedAt: integer('updated_at').notNull(),
    },
    (t) => [index('catalog_editions_work').on(t.workId, t.kind)],
  );

  const catalogAssets = table(
    'catalog_assets',
    {
      id: text('id').primaryKey(),
      editionId: text('edition_id')
        .notNull()
        .references(() => catalogEditions.id),
      root: integer('root').notNull(),
      path: text('path').notNull(),
      container: text('container').notNull(),
      fastHash: text('fast_hash').notNull(),
      sizeBytes: integer('size_bytes').notNull(),
      identification: text('identification').$type<Identification>().notNull(),
      kind: text('kind').notNull(),
      layout: text('layout').notNull(),
      /** Subtitle files found beside the medium at its last scan (read with it, never assets of their own). */
      subtitleFiles: text('subtitle_files', { mode: 'json' }).$type<SidecarSubtitle[]>().notNull().default([]),
      /** The sidecars' names, sizes and mtimes at the last scan: a rescan reads an unchanged medium again when they moved. */
      localSig: text('local_sig').notNull().default(''),
      createdAt: integer('created_at').notNull(),
      updatedAt: integer('updated_at').notNull(),
    },
    (t) => [uniqueIndex('catalog_assets_location').on(t.root, t.path), index('catalog_assets_edition').on(t.editionId)],
  );

  const catalogMediaIndexes = table('catalog_media_indexes', {
    id: text('id').primaryKey(),
    assetId: text('asset_id')
      .notNull()
      .unique()
      .references(() => catalogAssets.id, { onDelete: 'cascade' }),
    container: text('container').notNull(),
    bitrateBps: integer('bitrate_bps').notNull(),
    durationMs: integer('duration_ms').notNull(),
    capabilities: text('capabilities', { mode: 'json' }).$type<string[]>().notNull(),
    keyframesMs: text('keyframes_ms', { mode: 'json' }).$type<number[]>().notNull(),
    keyframeSource: text('keyframe_source').$type<KeyframeSource>().notNull(),
    streams: text('streams', { mode: 'json' }).$type<ProbeStream[]>().notNull(),
    indexVersion: integer('index_version').notNull(),
    createdAt: integer('created_at').notNull(),
  });

  const catalogRelations = table(
    'catalog_relations',
    {
      parentWorkId: text('parent_work_id')
        .notNull()
        .references(() => catalogWorks.id, { onDelete: 'cascade' }),
      childWorkId: text('child_work_id')
        .notNull()
        .references(() => catalogWorks.id, { onDelete: 'cascade' }),
      rel: text('rel').notNull(),
      ordinal: text('ordinal', { mode: 'json' }).$type<number[]>().notNull(),
      /** The ordinal as zero-padded text, so ORDER BY sorts [1, 10] after [1, 9] and a parent before its children. */
      ordinalKey: text('ordinal_key').notNull(),
      createdAt: integer('created_at').notNull(),
    },
    (t) => [uniqueIndex('catalog_relations_pair').on(t.parentWorkId, t.childWorkId, t.rel), index('catalog_relations_child').on(t.childWorkId)],
  );

  /** evt.catalog.assetIndexed, written in the transaction that indexes the asset and relayed once committed. */
  const catalogEventOutbox = eventOutboxTable(t, 'catalog_event_outbox');
  return { catalogWorks, catalogEditions, catalogAssets, catalogMediaIndexes, catalogRelations, catalogEventOutbox };
});

export const { catalogWorks, catalogEditions, catalogAssets, catalogMediaIndexes, catalogRelations, catalogEventOutbox } = catalogTables('sqlite');
